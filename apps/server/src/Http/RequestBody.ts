import { HttpServerError, type HttpServerRequest, UrlParams } from "@effect/platform"
import { Data, Effect, Option } from "effect"
import type { IncomingMessage } from "node:http"

/** Request bodies are small JSON objects or forms. */
export const maxBodyBytes = 1024 * 1024

/**
 * A body found too large while it arrives is read on, and dropped, up to this
 * much more, so that the client is answered rather than reset mid-send.
 */
const drainBytes = 2 * maxBodyBytes

/** Why a body was refused before anything looked at its content. */
export class BodyRefused extends Data.TaggedError("BodyRefused")<{
  readonly reason: "TooLarge" | "InvalidUtf8" | "Unreadable"
}> {
  override get message() {
    switch (this.reason) {
      case "TooLarge":
        return `The request body must not exceed ${maxBodyBytes} bytes`
      case "InvalidUtf8":
        return "The request body is not valid UTF-8"
      case "Unreadable":
        return "The request body could not be read"
    }
  }
}

const declaredLength = (request: HttpServerRequest.HttpServerRequest) => {
  const header = request.headers["content-length"]
  return header === undefined ? undefined : Number(header)
}

/** Reads the whole body, at most `maxBodyBytes`; past that, drops up to `drainBytes` more before failing. */
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
      if (size > maxBodyBytes + drainBytes) finish(Effect.fail(new BodyRefused({ reason: "TooLarge" })))
    }
    const onEnd = () =>
      finish(size > maxBodyBytes ? Effect.fail(new BodyRefused({ reason: "TooLarge" })) : Effect.succeed(Buffer.concat(chunks, size)))
    const onError = () => finish(Effect.fail(new BodyRefused({ reason: "Unreadable" })))
    source.on("data", onData).once("end", onEnd).once("error", onError).once("aborted", onError)
    return Effect.sync(cleanup)
  })

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

const readText = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    // A declared size over the limit is refused unread.
    if ((declaredLength(request) ?? 0) > maxBodyBytes) return yield* new BodyRefused({ reason: "TooLarge" })
    const bytes = yield* readBytes(request.source as IncomingMessage)
    return yield* Effect.try({ try: () => utf8.decode(bytes), catch: () => new BodyRefused({ reason: "InvalidUtf8" }) })
  })

const asRequestError = (request: HttpServerRequest.HttpServerRequest) => (cause: unknown) =>
  new HttpServerError.RequestError({ request, reason: "Decode", cause })

/** The BodyRefused behind a failure to read a body, if that is what it was. */
export const bodyRefusal = (error: unknown): Option.Option<BodyRefused> =>
  HttpServerError.isServerError(error) && error._tag === "RequestError" && error.cause instanceof BodyRefused
    ? Option.some(error.cause)
    : Option.none()

/**
 * The request, with its body read at most once, bounded by `maxBodyBytes` with
 * or without a Content-Length, and decoded as strict UTF-8: the platform's own
 * reader replaces invalid bytes with U+FFFD and resets the connection when a
 * chunked body runs over. The text and its JSON are kept, so that the JSON
 * body check and the endpoint's payload decoding parse the body once.
 */
export const withBoundedBody = (request: HttpServerRequest.HttpServerRequest): HttpServerRequest.HttpServerRequest => {
  const fail = asRequestError(request)
  const text = Effect.runSync(Effect.cached(Effect.mapError(readText(request), fail)))
  const json = Effect.runSync(Effect.cached(Effect.flatMap(text, (body) =>
    Effect.try({ try: (): unknown => body === "" ? null : JSON.parse(body), catch: fail }))))
  const overrides: Partial<Record<PropertyKey, unknown>> = {
    text,
    json,
    urlParamsBody: Effect.flatMap(text, (body) =>
      Effect.try({ try: () => UrlParams.fromInput(new URLSearchParams(body)), catch: fail })),
    arrayBuffer: Effect.map(text, (body) => new TextEncoder().encode(body).buffer)
  }
  return new Proxy(request, {
    get: (target, property) => property in overrides ? overrides[property] : Reflect.get(target, property, target)
  })
}
