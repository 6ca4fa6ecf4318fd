import { HttpServerRequest } from "@effect/platform"
import { BadRequest, DecodeIssue, HttpApiDecodeError, JsonBody } from "@postline/domain"
import { Effect, Layer } from "effect"
import { jsonContentType } from "./ContentTypes.js"
import { jsonShapeIssue } from "./JsonShape.js"
import { hasBody } from "./RequestBody.js"

const bodyMethods = new Set(["POST", "PUT", "PATCH"])

/**
 * Requests that carry a body must declare it as JSON, and its shape must stay
 * within the bounds of `jsonShapeLimits`, before the endpoint's schema reads it.
 */
export const JsonBodyLive = Layer.succeed(
  JsonBody,
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    if (!bodyMethods.has(request.method) || !hasBody(request.headers)) return
    const contentType = request.headers["content-type"]
    if (contentType === undefined || !jsonContentType.test(contentType)) {
      return yield* new BadRequest({
        message: "The request body must be JSON: send `Content-Type: application/json`",
        reason: "wrong_content_type"
      })
    }
    // A body that cannot be read or parsed fails here with the platform's RequestError, answered at the edge.
    const issue = jsonShapeIssue(yield* Effect.orDie(request.json))
    if (issue !== undefined) {
      const where = issue.path.length > 0 ? issue.path.join(".") : "body"
      return yield* new HttpApiDecodeError({
        message: `Invalid request: ${where}: ${issue.message}`,
        issues: [new DecodeIssue({ path: issue.path, message: issue.message })]
      })
    }
  })
)
