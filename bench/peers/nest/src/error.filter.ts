import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, NotFoundException } from "@nestjs/common"
import * as api from "../../common.mjs"

interface Response {
  status(code: number): Response
  set(headers: Record<string, string>): Response
  json(body: unknown): void
}

/** Every error as the baseline answers it: `{"message":…,"_tag":…}` with its status. */
@Catch()
export class ErrorFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost) {
    const http = host.switchToHttp()
    const request = http.getRequest<{ method: string; path: string }>()
    let error: api.HttpError
    if (exception instanceof api.HttpError) error = exception
    else if (exception instanceof NotFoundException) error = api.noRoute(request.method, request.path)
    // Express's JSON body parser's SyntaxError, as Nest's adapter passes it on.
    else if (exception instanceof HttpException && exception.cause instanceof SyntaxError) error = api.invalidJson()
    else if (exception instanceof HttpException && exception.getStatus() < 500) {
      error = new api.HttpError(exception.getStatus(), "BadRequest", exception.message)
    } else {
      console.error(exception)
      error = api.internalError()
    }
    const response = http.getResponse<Response>()
    if (error.status === 401) response.set(api.challenge)
    response.status(error.status).json(api.errorBody(error))
  }
}
