import { HttpClientError } from "@effect/platform"
import { DecodeIssue, optional } from "@postline/domain"
import { Effect, ParseResult, Schema } from "effect"

/**
 * Why a tool call failed, as the agent reads it: the API's own error (`_tag` NotFound, Forbidden,
 * PaymentRequired, Conflict, TooManyRequests, HttpApiDecodeError, … with its message, and the `reason` of a
 * Conflict, PaymentRequired or BadRequest), or what went wrong before the API answered: InvalidArguments,
 * Unreachable, UnexpectedResponse, InternalError.
 */
export class ToolError extends Schema.Class<ToolError>("ToolError")({
  _tag: Schema.String,
  message: Schema.String,
  reason: optional(Schema.String.annotations({
    description: "The API's stable code for why it refused (e.g. post_not_draft, insufficient_credits), when it " +
      "gives one: act on it rather than on the message"
  })),
  issues: optional(Schema.Array(DecodeIssue).annotations({ description: "Each argument that is wrong, and how" }))
}) {}

const isIssues = Schema.is(Schema.Array(DecodeIssue))

const issuesOf = (error: ParseResult.ParseError) =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) =>
    new DecodeIssue({ path: issue.path.map(String), message: issue.message })
  )

const summary = (issues: ReadonlyArray<DecodeIssue>) =>
  issues.map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "arguments"}: ${issue.message}`).join("; ")

/** Arguments that do not match the tool's input schema, each wrong field named, as the API words its own. */
export const invalidArguments = (error: ParseResult.ParseError) => {
  const issues = issuesOf(error)
  return new ToolError({ _tag: "InvalidArguments", message: `Invalid arguments: ${summary(issues)}`, issues })
}

const isApiError = (body: unknown): body is { readonly _tag: string; readonly message: string } =>
  typeof body === "object" && body !== null && "_tag" in body && typeof body._tag === "string" &&
  "message" in body && typeof body.message === "string"

/** The API error's reason code, when it has one. */
const reasonOf = (error: { readonly _tag: string }) =>
  "reason" in error && typeof error.reason === "string" ? { reason: error.reason } : {}

const unexpected = (message: string) => new ToolError({ _tag: "UnexpectedResponse", message })

/**
 * An answer the API's schema does not list (a 503 while its database is down, a proxy's 502) may still carry
 * the API's `{ _tag, message }`; anything else is said with its status.
 */
const fromResponseError = (error: HttpClientError.ResponseError) =>
  error.response.json.pipe(
    Effect.map((body) =>
      isApiError(body)
        ? new ToolError({ _tag: body._tag, message: body.message, ...reasonOf(body) })
        : unexpected(`The Postline API answered ${error.response.status} unexpectedly: ${error.message}`)
    ),
    Effect.orElseSucceed(() => unexpected(`The Postline API answered ${error.response.status} unexpectedly: ${error.message}`))
  )

/**
 * What a call of the API failed with, as a ToolError: the API's errors keep their `_tag`, message and issues;
 * the client's own failures (no connection, an answer it cannot read) are said in words.
 */
export const toToolError = (error: unknown): Effect.Effect<ToolError> => {
  if (error instanceof ToolError) return Effect.succeed(error)
  if (HttpClientError.isHttpClientError(error)) {
    return error._tag === "RequestError"
      ? Effect.succeed(new ToolError({ _tag: "Unreachable", message: `The Postline API could not be reached: ${error.message}` }))
      : fromResponseError(error)
  }
  if (ParseResult.isParseError(error)) {
    return Effect.succeed(unexpected(`The Postline API's answer does not match these tools' schemas: ${error.message}`))
  }
  if (isApiError(error)) {
    const issues = "issues" in error && isIssues(error.issues) ? { issues: error.issues } : {}
    return Effect.succeed(new ToolError({ _tag: error._tag, message: error.message, ...reasonOf(error), ...issues }))
  }
  return Effect.die(error)
}
