import { Clock, Data, Effect } from "effect"
import { DeviceLoginSettings } from "./Settings.js"

export class RateLimited extends Data.TaggedError("RateLimited")<{ readonly retryAfterSeconds: number }> {}

/** Who attempts an approval: the remote address, and the email typed into the form. */
export interface ApprovalAttempt {
  readonly address: string
  readonly email: string
}

/**
 * What failures are counted under: the address, and the email in lower case, so that guessing spread over
 * many addresses against one email is limited too. Emails compare without case, as the login does.
 */
export const limitKeys = ({ address, email }: ApprovalAttempt): ReadonlyArray<string> => [
  `address:${address}`,
  `email:${email.trim().toLowerCase()}`
]

/**
 * Failed approvals: at most `APPROVAL_MAX_FAILURES` (5) in any `APPROVAL_WINDOW_SECONDS` (15 minutes) per
 * remote address, and as many per email, whoever sends them; an attempt needs both to have some left. The
 * counts live in this process's memory, so each server process keeps its own
 * and a restart forgets them; behind a proxy, all its clients share one
 * address. The email count is per email whether or not a user has it, so it
 * says nothing about which emails exist; its price is that anyone can hold
 * up a person's approvals for the window by failing with their email.
 */
export class ApprovalRateLimit extends Effect.Service<ApprovalRateLimit>()("ApprovalRateLimit", {
  effect: Effect.gen(function*() {
    const { approvalMaxFailures: maxFailures, approvalWindowSeconds } = yield* DeviceLoginSettings
    const windowMillis = approvalWindowSeconds * 1000
    const failures = new Map<string, Array<number>>()

    // Keys whose failures have all aged out are dropped, so the map stays as small as the window.
    const forgetOld = (now: number) => {
      for (const [key, times] of failures) {
        const recent = times.filter((time) => time > now - windowMillis)
        if (recent.length === 0) failures.delete(key)
        else failures.set(key, recent)
      }
    }

    /**
     * Counts an attempt as failed, under its address and its email, until `succeeded` runs, so that attempts in
     * parallel cannot slip past the limit; fails when the address or the email has none left.
     */
    const attempt = (who: ApprovalAttempt) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        forgetOld(now)
        const keys = limitKeys(who)
        const exhausted = keys.map((key) => failures.get(key) ?? []).filter((times) => times.length >= maxFailures)
        if (exhausted.length > 0) {
          const freeAt = Math.max(...exhausted.map((times) => times[times.length - maxFailures] + windowMillis))
          return new RateLimited({ retryAfterSeconds: Math.ceil((freeAt - now) / 1000) })
        }
        for (const key of keys) failures.set(key, [...(failures.get(key) ?? []), now])
        const succeeded = Effect.sync(() => {
          for (const key of keys) {
            const current = failures.get(key) ?? []
            const index = current.indexOf(now)
            if (index >= 0) failures.set(key, current.toSpliced(index, 1))
          }
        })
        return Effect.succeed({ succeeded })
      })

    return { attempt } as const
  }),
  dependencies: [DeviceLoginSettings.Default]
}) {}
