import { HttpServerRequest } from "@effect/platform"
import { BadRequest, JsonBody } from "@postline/domain"
import { Effect, Layer } from "effect"

const bodyMethods = new Set(["POST", "PUT", "PATCH"])
const json = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i

export const JsonBodyLive = Layer.succeed(
  JsonBody,
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!bodyMethods.has(request.method)) return
    const contentType = request.headers["content-type"]
    if (contentType === undefined || !json.test(contentType)) {
      return yield* new BadRequest({ message: "The request body must be JSON: send `Content-Type: application/json`" })
    }
  })
)
