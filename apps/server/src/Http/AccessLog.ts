import { HttpMiddleware, HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"

/**
 * Whether a request's query string carries a secret: the signature of a signed URL is its permission, and a
 * device login's user code (the `/device` page's link) approves a login.
 */
export const hasSecretQuery = (request: HttpServerRequest.HttpServerRequest) => /[?&](signature|user_code)=/.test(request.url)

/**
 * The platform's access log line per request, with the query string left out where it holds a secret: a log
 * reader must not get a working download or upload URL, nor a code that approves a login. The logger reads the request it is given; the
 * app below it gets the request as it came.
 */
export const accessLog = HttpMiddleware.make((app) => {
  const logged = HttpMiddleware.logger(app)
  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (!hasSecretQuery(request)) return logged
    const shown = Object.create(request, { url: { value: request.url.split("?")[0] } })
    return HttpMiddleware.logger(Effect.provideService(app, HttpServerRequest.HttpServerRequest, request)).pipe(
      Effect.provideService(HttpServerRequest.HttpServerRequest, shown)
    )
  })
})
