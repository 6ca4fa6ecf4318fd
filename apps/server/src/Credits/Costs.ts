import { SocialProvider } from "@postline/domain"
import { Config, ConfigError, Effect, Either, Schema } from "effect"

/** What one publish to each provider costs, in whole credits, unless `CREDIT_COSTS` says otherwise. */
const defaultCosts: Record<SocialProvider, number> = { bluesky: 1, mastodon: 1, webhook: 0, x: 1, telegram: 1, discord: 1 }

/** What one live analytics read of an account costs (a webhook, Telegram and Discord have none to read). */
const defaultAnalyticsCosts: Record<SocialProvider, number> = { bluesky: 1, mastodon: 1, webhook: 0, x: 1, telegram: 0, discord: 0 }

const Credits = Schema.Int.pipe(Schema.between(0, 1_000_000))

const PerProvider = Schema.Struct({
  bluesky: Schema.optional(Credits),
  mastodon: Schema.optional(Credits),
  webhook: Schema.optional(Credits),
  x: Schema.optional(Credits),
  telegram: Schema.optional(Credits),
  discord: Schema.optional(Credits)
})

const Overrides = Schema.parseJson(Schema.Struct({ ...PerProvider.fields, analytics: Schema.optional(PerProvider) }))

const withOverrides = (defaults: Record<SocialProvider, number>, overrides: typeof PerProvider.Type = {}) => {
  const costs = { ...defaults }
  for (const [provider, cost] of Object.entries(overrides)) if (cost !== undefined) costs[provider as SocialProvider] = cost
  return costs
}

/**
 * The cost table, in one place: an operator overrides any provider's price with `CREDIT_COSTS` as JSON: a
 * publish's at the top level, a live analytics read's under `analytics`, e.g.
 * `{"bluesky":2,"webhook":1,"analytics":{"mastodon":0}}`. Providers left out keep their default.
 */
export class CreditCosts extends Effect.Service<CreditCosts>()("CreditCosts", {
  effect: Effect.gen(function*() {
    const overrides = yield* Config.string("CREDIT_COSTS").pipe(
      Config.withDefault("{}"),
      Config.mapOrFail((text) =>
        Either.mapLeft(
          // A misspelt provider would otherwise be dropped silently, leaving its default price.
          Schema.decodeEither(Overrides, { onExcessProperty: "error" })(text),
          () =>
            ConfigError.InvalidData(
              ["CREDIT_COSTS"],
              "must be a JSON object of whole credits per provider, e.g. {\"bluesky\":2,\"analytics\":{\"bluesky\":1}}"
            )
        )
      )
    )
    const { analytics, ...publish } = overrides
    const costs = withOverrides(defaultCosts, publish)
    const analyticsCosts = withOverrides(defaultAnalyticsCosts, analytics)
    return {
      costOf: (provider: SocialProvider): number => costs[provider],
      analyticsCostOf: (provider: SocialProvider): number => analyticsCosts[provider]
    } as const
  })
}) {}
