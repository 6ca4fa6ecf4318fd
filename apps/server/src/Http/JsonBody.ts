import { HttpServerRequest } from "@effect/platform"
import { BadRequest, JsonBody } from "@postline/domain"
import { Effect, Layer } from "effect"
import { jsonContentType } from "./ContentTypes.js"

const bodyMethods = new Set(["POST", "PUT", "PATCH"])

/** Request bodies are small JSON objects; a declared larger one is refused unread. */
export const maxBodyBytes = 1024 * 1024

export const JsonBodyLive = Layer.succeed(
  JsonBody,
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!bodyMethods.has(request.method)) return
    const contentType = request.headers["content-type"]
    if (contentType === undefined || !jsonContentType.test(contentType)) {
      return yield* new BadRequest({ message: "The request body must be JSON: send `Content-Type: application/json`" })
    }
    if (Number(request.headers["content-length"] ?? 0) > maxBodyBytes) {
      return yield* new BadRequest({ message: `The request body must not exceed ${maxBodyBytes} bytes` })
    }
  })
)
