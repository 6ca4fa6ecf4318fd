import { Clock, Data, Effect } from "effect"

const maxFailures = 5
const windowMillis = 15 * 60 * 1000

export class RateLimited extends Data.TaggedError("RateLimited")<{ readonly retryAfterSeconds: number }> {}

/**
 * Failed approvals per remote address: at most 5 in any 15 minutes. The
 * count lives in this process's memory, so each server process keeps its own
 * and a restart forgets it; behind a proxy, all its clients share one address.
 */
export class ApprovalRateLimit extends Effect.Service<ApprovalRateLimit>()("ApprovalRateLimit", {
  sync: () => {
    const failures = new Map<string, Array<number>>()

    // Addresses whose failures have all aged out are dropped, so the map stays as small as the window.
    const forgetOld = (now: number) => {
      for (const [address, times] of failures) {
        const recent = times.filter((time) => time > now - windowMillis)
        if (recent.length === 0) failures.delete(address)
        else failures.set(address, recent)
      }
    }

    /**
     * Counts an attempt as failed until `succeeded` runs, so that attempts in parallel cannot slip past the
     * limit; fails when the address has none left.
     */
    const attempt = (address: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        forgetOld(now)
        const times = failures.get(address) ?? []
        if (times.length >= maxFailures) {
          return new RateLimited({ retryAfterSeconds: Math.ceil((times[0] + windowMillis - now) / 1000) })
        }
        failures.set(address, [...times, now])
        const succeeded = Effect.sync(() => {
          const current = failures.get(address) ?? []
          const index = current.indexOf(now)
          if (index >= 0) failures.set(address, current.toSpliced(index, 1))
        })
        return Effect.succeed({ succeeded })
      })

    return { attempt } as const
  }
}) {}
