import type { IncomingMessage, Server, ServerResponse } from "node:http"
import type { Socket } from "node:net"

/** The request line and headers together, in bytes: Node's own default, stated here so the answer can name it. */
export const maxHeaderBytes = 16 * 1024

/** After answering, the rest of what the client sends is read and dropped this long, so it reads the answer before the close. */
const lingerMs = 2_000

interface ParserError extends Error {
  readonly code?: string
  readonly reason?: string
}

const statusLines: Record<number, string> = {
  400: "400 Bad Request",
  408: "408 Request Timeout",
  431: "431 Request Header Fields Too Large"
}

const answerFor = (error: ParserError) => {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return {
        status: 431,
        _tag: "RequestHeaderFieldsTooLarge",
        message: `The request line and headers must not exceed ${maxHeaderBytes} bytes`
      }
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: 408, _tag: "RequestTimeout", message: "The request did not arrive in time" }
    default:
      // llhttp's reasons are fixed texts ("Invalid header value char"): they never echo the request.
      return { status: 400, _tag: "BadRequest", message: `The request is not valid HTTP/1.1: ${error.reason ?? "malformed"}` }
  }
}

const rawResponse = ({ status, ...body }: ReturnType<typeof answerFor>) => {
  const json = JSON.stringify(body)
  return `HTTP/1.1 ${statusLines[status]}\r\ncontent-type: application/json\r\ncontent-length: ${
    Buffer.byteLength(json)
  }\r\nconnection: close\r\n\r\n${json}`
}

/**
 * Answers what Node's HTTP parser refuses (malformed requests, headers over
 * `maxHeaderBytes`, requests slower than the request timeout) with the
 * contract's `{ _tag, message }` body, where Node would send an empty one, and
 * closes the connection. A request that already has (part of) its answer is
 * only closed: a second answer would corrupt the first.
 */
export const answerClientErrors = (server: Server) => {
  const exchanges = new WeakMap<Socket, { readonly request: IncomingMessage; readonly response: ServerResponse }>()
  const answered = new WeakSet<Socket>()
  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    exchanges.set(request.socket, { request, response })
  })
  server.on("clientError", (error: ParserError, socket: Socket) => {
    // A failed parser reports again on each later packet: the first report is answered.
    if (answered.has(socket)) return
    answered.add(socket)
    const exchange = exchanges.get(socket)
    const answerStarted = exchange !== undefined && exchange.response.headersSent &&
      (!exchange.request.complete || !exchange.response.writableFinished)
    if (error.code === "ECONNRESET" || !socket.writable || answerStarted) return void socket.destroy()
    socket.end(rawResponse(answerFor(error)))
    setTimeout(() => socket.destroy(), lingerMs).unref()
  })
}
