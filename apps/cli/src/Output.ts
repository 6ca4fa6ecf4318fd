import { BadRequest, Conflict, PaymentRequired } from "@postline/domain"
import { Console, Effect, ParseResult, Predicate, Schema } from "effect"

/**
 * What a failed command reports: the error's `_tag` and, for a server refusal that gives one, its `reason` (its
 * exit status follows from them), and its message.
 */
export interface Failure {
  readonly _tag: string
  readonly reason?: string
  readonly message: string
}

// Only the API's refusals carry a reason code: other errors' `reason` (the HTTP client's "Transport") is no such code.
const reasonOf = (error: unknown) =>
  (error instanceof Conflict || error instanceof PaymentRequired || error instanceof BadRequest) && error.reason !== undefined
    ? { reason: error.reason }
    : {}

/** A schema's refusal in one line per issue, `path message`, rather than the tree of the schemas involved. */
const parseIssues = (error: ParseResult.ParseError) =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => [...issue.path, issue.message].join(" ")).join("; ")

/** Any error as a Failure: tagged errors keep their tag, anything else is an `Error`. */
export const failureOf = (error: unknown): Failure =>
  ParseResult.isParseError(error)
    ? { _tag: error._tag, message: parseIssues(error) }
    : {
      _tag: Predicate.hasProperty(error, "_tag") && typeof error._tag === "string" ? error._tag : "Error",
      ...reasonOf(error),
      message: Predicate.hasProperty(error, "message") && typeof error.message === "string" && error.message !== ""
        ? error.message
        : String(error)
    }

/**
 * `Error (NotFound): Post not found`, `Error (Conflict: post_not_draft): Post … has been sent: …`: how a failure
 * reads for people, on standard error.
 */
export const describeFailure = (failure: Failure) =>
  `Error (${failure._tag}${failure.reason === undefined ? "" : `: ${failure.reason}`}): ${failure.message}`

/** With --json, a failure is the one JSON document on standard output, so that a script reads it like an answer. */
export const failureDocument = (failure: Failure) =>
  JSON.stringify({
    error: { _tag: failure._tag, ...(failure.reason === undefined ? {} : { reason: failure.reason }), message: failure.message }
  })

/**
 * Where a command's words go. Standard output carries its answer alone: with `--json` exactly one JSON document
 * (the API's answer, or `{"error": {_tag, reason?, message}}`), otherwise tables and fields for people. Everything else
 * (instructions, previews, progress) goes to standard error. `Output.Default(json)` for the command's mode.
 */
export class Output extends Effect.Service<Output>()("postline/Output", {
  effect: (json: boolean) => Effect.succeed({
    json,
    /** The command's answer: `value` encoded by `schema` as JSON, or `text(value)` for people. */
    answer: <A, I>(schema: Schema.Schema<A, I>, value: A, text: (value: A) => string): Effect.Effect<void> =>
      json
        ? Schema.encode(schema)(value).pipe(Effect.orDie, Effect.flatMap((encoded) => Console.log(JSON.stringify(encoded))))
        : Console.log(text(value)),
    /** A line for people on standard error, in either mode. */
    note: (text: string): Effect.Effect<void> => Console.error(text),
    failure: (failure: Failure): Effect.Effect<void> =>
      json ? Console.log(failureDocument(failure)) : Console.error(describeFailure(failure))
  })
}) {}
