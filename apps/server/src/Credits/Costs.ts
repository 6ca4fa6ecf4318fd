import { SocialProvider } from "@postline/domain"
import { Config, ConfigError, Effect, Either, Schema } from "effect"

/** What one publish to each provider costs, in whole credits, unless `CREDIT_COSTS` says otherwise. */
const defaultCosts: Record<SocialProvider, number> = { bluesky: 1, mastodon: 1, webhook: 0 }

const Overrides = Schema.parseJson(
  Schema.Record({ key: SocialProvider, value: Schema.Int.pipe(Schema.between(0, 1_000_000)) }).pipe(Schema.partial)
)

/**
 * The cost table, in one place: an operator overrides any provider's price
 * with `CREDIT_COSTS` as JSON, e.g. `{"bluesky":2,"webhook":1}`.
 */
export class CreditCosts extends Effect.Service<CreditCosts>()("CreditCosts", {
  effect: Effect.gen(function*() {
    const overrides = yield* Config.string("CREDIT_COSTS").pipe(
      Config.withDefault("{}"),
      Config.mapOrFail((text) =>
        Either.mapLeft(
          Schema.decodeEither(Overrides)(text),
          () => ConfigError.InvalidData(["CREDIT_COSTS"], "must be a JSON object of whole credits per provider, e.g. {\"bluesky\":2}")
        )
      )
    )
    const costs: Record<SocialProvider, number> = { ...defaultCosts }
    for (const [provider, cost] of Object.entries(overrides)) costs[provider as SocialProvider] = cost!
    return { costOf: (provider: SocialProvider): number => costs[provider] } as const
  })
}) {}
