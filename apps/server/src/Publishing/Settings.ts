import { Config, ConfigError, Duration, Effect, Layer } from "effect"
import { configuredOutbound } from "../Outbound/Outbound.js"

const positive = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: "must be a whole number of at least 1", validation: (value) => value >= 1 })
  )

/**
 * How sends to providers are bounded: one timeout per send; how long an unfinished send belongs to its process
 * before another takes it over (it died, or the timeout left the send in doubt); how many attempts a target
 * gets; and the longest wait a provider's Retry-After may ask for.
 */
export class PublishSettings extends Effect.Service<PublishSettings>()("PublishSettings", {
  effect: Effect.gen(function*() {
    const timeoutSeconds = yield* positive("PUBLISH_TIMEOUT_SECONDS", 30)
    const recoverySeconds = yield* positive("PUBLISH_RECOVERY_SECONDS", 60)
    if (recoverySeconds <= timeoutSeconds + 5) {
      return yield* Effect.fail(ConfigError.InvalidData(
        ["PUBLISH_RECOVERY_SECONDS"],
        `must be more than PUBLISH_TIMEOUT_SECONDS + 5 (${timeoutSeconds + 5}): a send may take that long`
      ))
    }
    return {
      timeout: Duration.seconds(timeoutSeconds),
      recoverySeconds,
      maxAttempts: yield* positive("SCHEDULE_MAX_ATTEMPTS", 5),
      retryAfterMaxSeconds: yield* positive("PROVIDER_RETRY_AFTER_MAX_SECONDS", 15 * 60)
    } as const
  })
}) {}


/**
 * The providers' outbound client: a call may take a second more than a send (`PUBLISH_TIMEOUT_SECONDS`), whose
 * own timeout governs it.
 */
export const ProvidersOutboundLive = Layer.unwrapEffect(
  Effect.map(PublishSettings, ({ timeout }) => configuredOutbound(Duration.toMillis(timeout) + 1000))
).pipe(Layer.provide(PublishSettings.Default))
