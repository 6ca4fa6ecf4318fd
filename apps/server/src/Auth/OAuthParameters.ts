import { HttpApp, HttpServerRequest, HttpServerResponse, UrlParams } from "@effect/platform"
import { oauthError } from "@postline/domain"
import { Effect, ParseResult, Predicate, Schema } from "effect"
import { formContentType, jsonContentType } from "../Http/ContentTypes.js"
import { refusalsToEdge } from "../Http/RequestBody.js"

const invalidRequest = (description: string) => oauthError("invalid_request", description)

/** Parameters without a value count as absent (RFC 6749 §3.1). */
export const withoutEmptyParameters = (parameters: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(parameters).filter(([, value]) => value !== ""))

/**
 * The parameters of an OAuth request, form-encoded (RFC 6749 appendix B) or
 * as a JSON object. Parameters without a value count as absent (RFC 6749 §3.1).
 */
export const readParameters = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const contentType = request.headers["content-type"] ?? ""
  const body: unknown = formContentType.test(contentType)
    ? UrlParams.toRecord(yield* refusalsToEdge(request.urlParamsBody))
    : jsonContentType.test(contentType)
    ? yield* refusalsToEdge(request.json)
    : yield* invalidRequest("Send the parameters as application/x-www-form-urlencoded (or as a JSON object)")
  if (!Predicate.isRecord(body)) return yield* invalidRequest("The parameters must be a JSON object of strings")
  return withoutEmptyParameters(body)
}).pipe(
  Effect.catchTag("RequestError", () => invalidRequest("The request body could not be read as its content type says"))
)

/** Decodes the parameters with the endpoint's schema; whatever does not fit is invalid_request, naming every issue. */
export const decodeParameters = <A, I>(schema: Schema.Schema<A, I>) => (parameters: Record<string, unknown>) =>
  Schema.decodeUnknown(schema, { errors: "all" })(parameters).pipe(
    Effect.mapError((error) =>
      invalidRequest(
        ParseResult.ArrayFormatter.formatErrorSync(error)
          .map((issue) => `${issue.path.join(".")} ${issue.message}`)
          .join("; ")
      )
    )
  )

/** RFC 6749 §5.1: answers holding tokens or other secrets, and their errors, must not be cached. */
export const noStore = HttpApp.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setHeaders(response, { "cache-control": "no-store", pragma: "no-cache" }))
)
