import { RateLimiter } from "@effect/experimental"
import { Data, Duration, Effect } from "effect"
import { makeFifoLimiter } from "../Concurrency/FifoLimiter.js"
import { RateLimiterLive } from "../RateLimits/Store.js"
import { DeviceLoginSettings } from "./Settings.js"

export class RateLimited extends Data.TaggedError("RateLimited")<{ readonly retryAfterSeconds: number }> {}

/** Who attempts an approval: the client address, and the email typed into the form. */
export interface ApprovalAttempt {
  readonly address: string
  readonly email: string
}

/**
 * What failures are counted under: the address, and the email in lower case, so that guessing spread over
 * many addresses against one email is limited too. Emails compare without case, as the login does.
 */
export const limitKeys = ({ address, email }: ApprovalAttempt): ReadonlyArray<string> => [
  `approval-address:${address}`,
  `approval-email:${email.trim().toLowerCase()}`
]

/**
 * Failed approvals, per client address and per email whoever sends them: `APPROVAL_MAX_FAILURES` (5) at once,
 * then one more every `APPROVAL_WINDOW_SECONDS / APPROVAL_MAX_FAILURES` (3 minutes), a token bucket in the
 * shared RateLimiter (Redis when configured, so every process counts alike). An attempt needs both to have
 * one left. The email count is per email whether or not a user has it, so it says nothing about which emails
 * exist; its price is that anyone can hold up a person's approvals by failing with their email.
 *
 * Checking a password costs about 0.13 s of CPU and 32 MiB (scrypt): at most `PASSWORD_CHECK_CONCURRENCY`
 * attempts run at once in a process, the others wait their turn in order.
 */
export class ApprovalRateLimit extends Effect.Service<ApprovalRateLimit>()("ApprovalRateLimit", {
  effect: Effect.gen(function*() {
    const limiter = yield* RateLimiter.RateLimiter
    const settings = yield* DeviceLoginSettings
    const inTurn = yield* makeFifoLimiter(settings.passwordCheckConcurrency)
    const retryAfterSeconds = Math.ceil(settings.approvalWindowSeconds / settings.approvalMaxFailures)

    const take = (key: string, tokens: number) =>
      limiter.consume({
        algorithm: "token-bucket",
        onExceeded: "fail",
        window: Duration.seconds(settings.approvalWindowSeconds),
        limit: settings.approvalMaxFailures,
        key,
        tokens
      })

    // Taking no token reads the bucket. A store that does not answer lets the attempt through, as requests are.
    const ensureFailuresLeft = (who: ApprovalAttempt) =>
      Effect.forEach(limitKeys(who), (key) => take(key, 0)).pipe(
        Effect.map((buckets) => buckets.every((bucket) => bucket.remaining >= 1)),
        Effect.catchTag("RateLimiterError", (error) => Effect.succeed(error.reason !== "Exceeded")),
        Effect.flatMap((left) => left ? Effect.void : new RateLimited({ retryAfterSeconds }))
      )

    const recordFailure = (who: ApprovalAttempt) =>
      Effect.forEach(limitKeys(who), (key) => Effect.ignore(take(key, 1)), { discard: true })

    /**
     * Runs `attempt` when the address and the email have failures left, in turn with the other password
     * checks, and counts it as failed unless `succeeded` says otherwise. The limits are read again once its
     * turn has come, so that attempts queued together stop as soon as the failures before them exhaust them.
     */
    const guard = <A, E, R>(who: ApprovalAttempt, attempt: Effect.Effect<A, E, R>, succeeded: (a: A) => boolean) =>
      Effect.zipRight(
        ensureFailuresLeft(who),
        inTurn(Effect.zipRight(
          ensureFailuresLeft(who),
          Effect.tap(attempt, (outcome) => succeeded(outcome) ? Effect.void : recordFailure(who))
        ))
      )

    return { guard } as const
  }),
  dependencies: [DeviceLoginSettings.Default, RateLimiterLive]
}) {}
