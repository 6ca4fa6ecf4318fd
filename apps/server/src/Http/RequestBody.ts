import { HttpServerError, type HttpServerRequest } from "@effect/platform"
import { Cause, Data, Effect, Option } from "effect"
import type { IncomingMessage } from "node:http"
import { parseForm } from "./FormBody.js"

/** Request bodies are small JSON objects or forms. */
export const maxBodyBytes = 1024 * 1024

/** Why a body was refused before anything looked at its content. */
export class BodyRefused extends Data.TaggedError("BodyRefused")<{
  readonly reason: "TooLarge" | "InvalidUtf8" | "InvalidFormUtf8" | "Unreadable"
}> {
  override get message() {
    switch (this.reason) {
      case "TooLarge":
        return `The request body must not exceed ${maxBodyBytes} bytes`
      case "InvalidUtf8":
        return "The request body is not valid UTF-8"
      case "InvalidFormUtf8":
        return "The form's percent-encoded bytes are not valid UTF-8"
      case "Unreadable":
        return "The request body could not be read"
    }
  }
}

/**
 * Reads the whole body, keeping at most `maxBodyBytes`. A larger one is read
 * to its end and dropped, however it is sent, before it is refused: a server
 * that closes while the client still sends resets the connection, and the
 * client never reads the answer. The request timeout bounds how long that takes.
 */
const readBytes = (source: IncomingMessage) =>
  Effect.async<Buffer, BodyRefused>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      source.off("data", onData).off("end", onEnd).off("error", onError).off("aborted", onError)
    }
    const finish = (result: Effect.Effect<Buffer, BodyRefused>) => {
      cleanup()
      resume(result)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= maxBodyBytes) return void chunks.push(chunk)
      chunks.length = 0
    }
    const onEnd = () =>
      finish(size > maxBodyBytes ? Effect.fail(new BodyRefused({ reason: "TooLarge" })) : Effect.succeed(Buffer.concat(chunks, size)))
    const onError = () => finish(Effect.fail(new BodyRefused({ reason: "Unreadable" })))
    source.on("data", onData).once("end", onEnd).once("error", onError).once("aborted", onError)
    return Effect.sync(cleanup)
  })

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

const readText = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.flatMap(readBytes(request.source as IncomingMessage), (bytes) =>
    Effect.try({ try: () => utf8.decode(bytes), catch: () => new BodyRefused({ reason: "InvalidUtf8" }) }))

const asRequestError = (request: HttpServerRequest.HttpServerRequest) => (cause: unknown) =>
  new HttpServerError.RequestError({ request, reason: "Decode", cause })

/** The BodyRefused behind a failure to read a body, or passed on as it is, if that is what it was. */
export const bodyRefusal = (error: unknown): Option.Option<BodyRefused> =>
  error instanceof BodyRefused
    ? Option.some(error)
    : HttpServerError.isServerError(error) && error._tag === "RequestError" && error.cause instanceof BodyRefused
    ? Option.some(error.cause)
    : Option.none()

/** The BodyRefused a failure died of, if any: refusals are answered at the edge (`ErrorBodies.ts`). */
export const refusalIn = (cause: Cause.Cause<unknown>): Option.Option<BodyRefused> =>
  Option.flatMap(Cause.dieOption(cause), bodyRefusal)

/**
 * Reading a body on a route that answers its own errors: a body refused for
 * its size or encoding still gets the edge's answer, the same on every route.
 */
export const refusalsToEdge = <A, E, R>(read: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.catchIf(read, (error) => Option.isSome(bodyRefusal(error)), Effect.die)

/** Whether the request carries a body at all: without Transfer-Encoding or a non-zero Content-Length, it has none. */
export const hasBody = (headers: Readonly<Record<string, string | undefined>>) =>
  headers["transfer-encoding"] !== undefined || (headers["content-length"] ?? "0") !== "0"

/**
 * The request, with its body read at most once, bounded by `maxBodyBytes` with
 * or without a Content-Length, and decoded as strict UTF-8: the platform's own
 * reader replaces invalid bytes with U+FFFD and resets the connection when a
 * chunked body runs over. The text and its JSON are kept, so that the JSON
 * body check and the endpoint's payload decoding parse the body once.
 * A request without a body is left as it is. The others keep every property
 * of the original through their prototype, which a Proxy would slow down on
 * every access.
 */
export const withBoundedBody = (request: HttpServerRequest.HttpServerRequest): HttpServerRequest.HttpServerRequest => {
  if (!hasBody(request.headers)) return request
  const fail = asRequestError(request)
  const text = Effect.runSync(Effect.cached(Effect.mapError(readText(request), fail)))
  const json = Effect.runSync(Effect.cached(Effect.flatMap(text, (body) =>
    Effect.try({ try: (): unknown => body === "" ? null : JSON.parse(body), catch: fail }))))
  return Object.create(request, {
    text: { value: text },
    json: { value: json },
    urlParamsBody: {
      value: Effect.flatMap(text, (body) =>
        Effect.try({ try: () => parseForm(body), catch: () => fail(new BodyRefused({ reason: "InvalidFormUtf8" })) }))
    },
    arrayBuffer: { value: Effect.map(text, (body) => new TextEncoder().encode(body).buffer) }
  })
}
