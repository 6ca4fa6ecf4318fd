import { Config, Effect } from "effect"

const positive = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be a positive integer`, validation: (n) => n > 0 })
  )

/** The request limits, each a setting with its default (README, Configuration). */
export class RateLimitSettings extends Effect.Service<RateLimitSettings>()("RateLimitSettings", {
  effect: Effect.all({
    callerRequests: positive("RATE_LIMIT_REQUESTS", 1200),
    addressRequests: positive("RATE_LIMIT_ANONYMOUS_REQUESTS", 120),
    transferRequests: positive("RATE_LIMIT_TRANSFER_REQUESTS", 1200),
    windowSeconds: positive("RATE_LIMIT_WINDOW_SECONDS", 60)
  })
}) {}
