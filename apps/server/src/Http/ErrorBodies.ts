import { HttpApiBuilder, HttpApiError, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import {
  BadRequest,
  type BadRequestReason,
  DecodeIssue,
  HttpApiDecodeError,
  InternalError,
  MethodNotAllowed,
  NotFound,
  PostlineApi,
  Unauthorized
} from "@postline/domain"
import { Cause, Effect, Layer, Option, Schema } from "effect"
import { makeAllowedMethods } from "./AllowedMethods.js"
import { type BodyRefused, refusalIn, withBoundedBody } from "./RequestBody.js"

type PlatformIssue = HttpApiError.HttpApiDecodeError["issues"][number]

const within = (outer: PlatformIssue["path"], inner: PlatformIssue["path"]) =>
  outer.every((key, index) => inner[index] === key)

// A nullable field that fails reports what is wrong with its non-null form;
// the union's "Expected null" beside that is noise.
const isNullAlternative = (issue: PlatformIssue, all: ReadonlyArray<PlatformIssue>) =>
  issue._tag === "Type" && issue.message.startsWith("Expected null,") &&
  all.some((other) => other !== issue && within(issue.path, other.path))

/** An answer lists this many issues at most, and says how many more it left out. */
export const maxReportedIssues = 20

const toContractDecodeError = (error: HttpApiError.HttpApiDecodeError) => {
  const all = error.issues.filter((issue) => !isNullAlternative(issue, error.issues))
  const issues = all.slice(0, maxReportedIssues)
    .map((issue) => new DecodeIssue({ path: issue.path.map(String), message: issue.message }))
  const summary = issues.map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "body"}: ${issue.message}`)
  const omitted = all.length - issues.length
  if (omitted > 0) summary.push(`${omitted} more ${omitted === 1 ? "issue" : "issues"} not listed`)
  return new HttpApiDecodeError({ message: `Invalid request: ${summary.join("; ")}`, issues })
}

// RFC 6750: a 401 names the scheme the caller should use.
const challenge = (error: Unauthorized) =>
  Effect.map(Effect.orDie(encodeUnauthorized(error)), (body) =>
    HttpServerResponse.unsafeJson(body, { status: 401, headers: { "www-authenticate": "Bearer realm=\"postline\"" } }))

const encodeUnauthorized = Schema.encode(Unauthorized)

const isRequestBodyError = (defect: unknown) =>
  HttpServerError.isServerError(defect) && defect._tag === "RequestError"

const bodyRefusalReasons: Record<BodyRefused["reason"], BadRequestReason> = {
  TooLarge: "body_too_large",
  InvalidUtf8: "body_not_utf8",
  InvalidFormUtf8: "body_not_utf8",
  Unreadable: "body_unreadable"
}

// A body refused for its size is not read to its end: the connection closes after the answer.
const refuseBody = (refusal: BodyRefused) =>
  Effect.map(
    Effect.orDie(encodeBadRequest(new BadRequest({ message: refusal.message, reason: bodyRefusalReasons[refusal.reason] }))),
    (body) =>
      HttpServerResponse.unsafeJson(body, {
        status: 400,
        headers: refusal.reason === "TooLarge" ? { connection: "close" } : {}
      })
  )

const encodeBadRequest = Schema.encode(BadRequest)

// RFC 9110: a path that exists answers a method it does not have with 405 and the methods it has.
const methodNotAllowed = (method: string, path: string, allowed: ReadonlyArray<string>) =>
  Effect.map(
    Effect.orDie(encodeMethodNotAllowed(
      new MethodNotAllowed({ message: `${path} does not take ${method}: it takes ${allowed.join(", ")}` })
    )),
    (body) => HttpServerResponse.unsafeJson(body, { status: 405, headers: { allow: allowed.join(", ") } })
  )

const encodeMethodNotAllowed = Schema.encode(MethodNotAllowed)

/**
 * Gives every failure the contract's `{ _tag, message }` body: the platform's
 * own decode error, unknown routes (404, or 405 where the path has other
 * methods) and unreadable bodies are rewritten, and anything unexpected
 * becomes a 500 whose details go to the log only.
 */
export const ErrorBodiesLive = HttpApiBuilder.middleware(
  PostlineApi,
  Effect.map(makeAllowedMethods, (allowedMethods) => (app) =>
    Effect.catchAllCause(
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const bounded = withBoundedBody(request)
        return bounded === request ? app : Effect.provideService(app, HttpServerRequest.HttpServerRequest, bounded)
      }), (cause) =>
      Effect.gen(function*() {
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure)) {
          // The router's error type does not name what the platform itself raises.
          const error: unknown = failure.value
          if (error instanceof HttpApiError.HttpApiDecodeError) return yield* toContractDecodeError(error)
          if (error instanceof Unauthorized) return yield* challenge(error)
          if (HttpServerError.isServerError(error) && error._tag === "RouteNotFound") {
            const request = yield* HttpServerRequest.HttpServerRequest
            const path = request.url.split("?")[0]!
            const allowed = yield* allowedMethods(path)
            // A path of a route that takes this very method was refused for another reason (a parameter over the
            // router's length): not found, as before.
            if (allowed.length > 0 && !allowed.includes(request.method === "HEAD" ? "GET" : request.method)) {
              return yield* methodNotAllowed(request.method, path, allowed)
            }
            return yield* new NotFound({ message: `No route for ${request.method} ${path}` })
          }
          return yield* Effect.failCause(cause)
        }
        const defect = Cause.dieOption(cause)
        const refusal = refusalIn(cause)
        if (Option.isSome(refusal)) return yield* refuseBody(refusal.value)
        if (Option.isSome(defect) && isRequestBodyError(defect.value)) {
          return yield* new BadRequest({ message: "The request body is not valid JSON", reason: "invalid_json" })
        }
        if (Cause.isInterruptedOnly(cause)) return yield* Effect.failCause(cause)
        yield* Effect.logError("Unexpected failure", cause)
        return yield* new InternalError({ message: "Internal server error" })
      })
    )
  )
).pipe(Layer.provide(HttpApiBuilder.Router.Live))
