import { RateLimiter } from "@effect/experimental"
import { HttpApp, HttpServerResponse } from "@effect/platform"
import { TooManyRequests } from "@postline/domain"
import { Duration, Effect, Ref } from "effect"
import { RateLimitSettings } from "./Settings.js"
import { RateLimiterLive } from "./Store.js"

/**
 * A limit of requests per window, named in the RateLimit fields; `caller`s are tokens and API keys, `transfer`s
 * the signed downloads and uploads of bytes, counted per address.
 */
export type Policy = "caller" | "address" | "transfer"

const whose = {
  caller: "for each token or API key",
  address: "from each address",
  transfer: "of signed downloads and uploads from each address"
} as const

const seconds = (duration: Duration.Duration) => Math.max(0, Math.ceil(Duration.toSeconds(duration)))

/**
 * Counts requests against their policy, per key, in the shared RateLimiter; every answer then carries the
 * RateLimit-Policy and RateLimit fields (draft-ietf-httpapi-ratelimit-headers). A store that fails lets the
 * request through unlimited: an outage of Redis must not become one of the API. The log says so once per
 * outage, and again when counting works again.
 */
export class RequestLimits extends Effect.Service<RequestLimits>()("RequestLimits", {
  effect: Effect.gen(function*() {
    const limiter = yield* RateLimiter.RateLimiter
    const settings = yield* RateLimitSettings
    const storeDown = yield* Ref.make(false)
    const limits = {
      caller: settings.callerRequests,
      address: settings.addressRequests,
      transfer: settings.transferRequests
    } as const
    const windowSeconds = settings.windowSeconds

    const withFields = (fields: Record<string, string>) =>
      HttpApp.appendPreResponseHandler((_request, response) =>
        Effect.succeed(HttpServerResponse.setHeaders(response, fields)))

    const policyField = (policy: Policy) => `"${policy}";q=${limits[policy]};w=${windowSeconds}`
    const stateField = (policy: Policy, remaining: number, reset: Duration.Duration) =>
      `"${policy}";r=${remaining};t=${seconds(reset)}`

    // Redis keeps a count for `window / limit` milliseconds per request, and only a whole number of them:
    // the window is stretched by at most a millisecond per request of the limit so that it divides evenly.
    const windowOf = (policy: Policy) =>
      Duration.millis(limits[policy] * Math.ceil((windowSeconds * 1000) / limits[policy]))

    /** Counts one request of `key` under `policy`; fails with TooManyRequests past the limit. */
    const count = (policy: Policy, key: string) =>
      limiter.consume({
        algorithm: "fixed-window",
        onExceeded: "fail",
        window: windowOf(policy),
        limit: limits[policy],
        key: `${policy}:${key}`
      }).pipe(
        Effect.tap((result) =>
          Effect.zipRight(
            Effect.whenEffect(
              Effect.logInfo("Rate limiting works again"),
              Ref.getAndSet(storeDown, false)
            ),
            withFields({
              "ratelimit-policy": policyField(policy),
              ratelimit: stateField(policy, result.remaining, result.resetAfter)
            })
          )),
        Effect.asVoid,
        Effect.catchTags({
          RateLimiterError: (error) => {
            if (error.reason === "Exceeded") {
              const retryAfter = seconds(error.retryAfter)
              return Effect.zipRight(
                withFields({
                  "ratelimit-policy": policyField(policy),
                  ratelimit: stateField(policy, 0, error.retryAfter),
                  "retry-after": String(retryAfter)
                }),
                new TooManyRequests({
                  message: `Too many requests: at most ${limits[policy]} every ${windowSeconds} seconds ${
                    whose[policy]
                  }; try again in ${retryAfter} seconds`
                })
              )
            }
            return Effect.zipRight(
              Effect.whenEffect(
                Effect.logWarning("Rate limiting is off: its store does not answer; requests are served unlimited")
                  .pipe(Effect.annotateLogs("reason", error.message)),
                Effect.map(Ref.getAndSet(storeDown, true), (wasDown) => !wasDown)
              ),
              withFields({ "ratelimit-policy": policyField(policy) })
            )
          }
        })
      )

    return { count } as const
  }),
  dependencies: [RateLimitSettings.Default, RateLimiterLive]
}) {}
