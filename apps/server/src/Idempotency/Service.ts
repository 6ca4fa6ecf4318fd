import { HttpApiSchema, HttpServerResponse } from "@effect/platform"
import { BadRequest, Conflict, CurrentCaller, replayedHeader } from "@postline/domain"
import { Cause, Config, Context, Effect, Exit, Option, Schema } from "effect"
import { createHash } from "node:crypto"
import { callerLabel } from "../CallerLabel.js"
import { IdempotencyRepo, type KeyOf, type StoredAnswer } from "./Repo.js"

/** JSON with object keys in order, so that the same request always reads the same. */
const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, inner) =>
    inner !== null && typeof inner === "object" && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner)

const fingerprintOf = (request: unknown) => createHash("sha256").update(canonicalJson(request)).digest("hex")

const asResponse = (answer: StoredAnswer, replayed: boolean) =>
  HttpServerResponse.text(answer.body, {
    status: answer.status,
    contentType: "application/json",
    ...(replayed ? { headers: { [replayedHeader]: "true" } } : {})
  })

/** An error of the API, as its own class encodes it, with the status it declares. */
const answerOfError = (error: unknown): Option.Option<StoredAnswer> => {
  const schema = (error as { readonly constructor?: unknown })?.constructor
  if (!Schema.isSchema(schema)) return Option.none()
  const status = HttpApiSchema.getStatusError(schema)
  // A 429 says to try again later: kept, the same key would replay it all day.
  if (status >= 500 || status === 429) return Option.none()
  return Option.some({ status, body: JSON.stringify(Schema.encodeUnknownSync(schema as Schema.Schema<unknown>)(error)) })
}

/**
 * Given to an operation while its key is held: `store` keeps the operation's answer in the transaction it is
 * called in, so that what the operation paid for and the answer a retry replays commit together.
 */
export class IdempotentAnswer extends Context.Tag("IdempotentAnswer")<
  IdempotentAnswer,
  { readonly store: (answer: unknown) => Effect.Effect<void> }
>() {}

/** Keeps `answer` as the request's key's, in the current transaction; nothing when the request has no key. */
export const storeIdempotentAnswer = (answer: unknown) =>
  Effect.flatMap(Effect.serviceOption(IdempotentAnswer), (held) => Option.isSome(held) ? held.value.store(answer) : Effect.void)

/**
 * Idempotency-Key, as the IETF draft and Stripe's users expect it. The first
 * request with a key runs; its answer, success or 4xx, is kept 24 hours and a
 * later request with the same key and the same request gets it again, byte for
 * byte, with `Idempotent-Replayed: true`, and nothing runs again. The same key
 * while the first runs gives 409; with another request, 400. A 5xx, a 429 or a
 * crash keeps nothing, so the key may be tried again. Keys are the caller's own, per
 * operation. An operation that finishes in the background what its request
 * began (a publish in doubt, or whose process died) gives `resumable`: an
 * answer that is not `final` yet is not kept, and the key answers 409 until
 * `resume` reads the final one from what was recorded, then that one.
 */
export class Idempotency extends Effect.Service<Idempotency>()("Idempotency", {
  effect: Effect.gen(function*() {
    const repo = yield* IdempotencyRepo
    const keptSeconds = yield* Config.integer("IDEMPOTENCY_KEY_HOURS").pipe(Config.withDefault(24), Config.map((hours) => hours * 3600))
    // Longer than any request may take: a key held this long without an answer lost its process.
    const abandonedAfterSeconds = 10 * 60

    const respond = <A, I, E, R>(
      request: { readonly operation: string; readonly key: string | undefined; readonly request: unknown },
      success: Schema.Schema<A, I>,
      run: Effect.Effect<A, E, R>,
      resumable?: {
        readonly final: (answer: A) => boolean
        readonly resume: (startedAt: Date) => Effect.Effect<Option.Option<A>, E, R>
      }
    ) =>
      Effect.gen(function*() {
        const encodeSuccess = (value: A): StoredAnswer => ({ status: 200, body: JSON.stringify(Schema.encodeSync(success)(value)) })
        if (request.key === undefined) return asResponse(encodeSuccess(yield* run), false)
        const id: KeyOf = { caller: callerLabel(yield* CurrentCaller), operation: request.operation, key: request.key }
        const claim = yield* repo.claim(id, fingerprintOf(request.request), { keptSeconds, abandonedAfterSeconds })
        switch (claim._tag) {
          case "Answered":
            return asResponse(claim.answer, true)
          case "OtherRequest":
            return yield* new BadRequest({
              message: "This Idempotency-Key was used with a different request: use a new key for a new request",
              reason: "idempotency_key_reused"
            })
          case "Running": {
            const resumed = resumable === undefined ? Option.none() : yield* resumable.resume(claim.startedAt)
            if (Option.isSome(resumed)) {
              const answer = encodeSuccess(resumed.value)
              yield* repo.store(id, answer)
              return asResponse(answer, true)
            }
            if (!claim.abandoned || !(yield* repo.retake(id, claim.startedAt, keptSeconds))) {
              return yield* new Conflict({
                message: "A request with this Idempotency-Key is still being processed: retry it later for its answer",
                reason: "idempotency_key_in_progress"
              })
            }
            // Its request died and left no answer to read: this one runs instead.
            break
          }
        }
        yield* repo.sweep
        // Whether the operation kept its answer itself, in its own transaction (storeIdempotentAnswer).
        let storedWithin = false
        const exit = yield* Effect.exit(Effect.provideService(run, IdempotentAnswer, {
          store: (value) =>
            Effect.zipRight(repo.store(id, encodeSuccess(value as A)), Effect.sync(() => void (storedWithin = true)))
        }))
        const answer = Exit.match(exit, {
          onSuccess: (value) => Option.some(encodeSuccess(value)),
          onFailure: (cause) => Option.flatMap(Cause.failureOption(cause), answerOfError)
        })
        if (Option.isNone(answer)) {
          yield* repo.release(id)
          return yield* exit
        }
        // Not final: the key stays held, for `resume` to read the final answer when there is one.
        if (!storedWithin && !(resumable !== undefined && Exit.isSuccess(exit) && !resumable.final(exit.value))) {
          yield* repo.store(id, answer.value)
        }
        return asResponse(answer.value, false)
      })

    return { respond } as const
  }),
  dependencies: [IdempotencyRepo.Default]
}) {}
