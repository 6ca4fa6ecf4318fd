import type { SocialProvider } from "@postline/domain"
import { Config, ConfigError, Effect, Either, Schema } from "effect"

/** At most `limit` points in any `seconds`, each send costing `cost`. */
export const BudgetWindow = Schema.Struct({
  limit: Schema.Int.pipe(Schema.positive()),
  cost: Schema.Int.pipe(Schema.positive()),
  seconds: Schema.Int.pipe(Schema.between(1, 86_400))
})
export type BudgetWindow = typeof BudgetWindow.Type

/**
 * What each provider lets one account do, unless `PROVIDER_BUDGETS` says otherwise. Bluesky: 5,000 write
 * points an hour and 35,000 a day, a post costing 3; and, since each send logs in, 30 logins in 5 minutes
 * and 300 a day. Mastodon: 300 requests in 5 minutes. X: 100 posts in 15 minutes, its per-user limit of
 * POST /2/tweets (docs.x.com/x-api/fundamentals/rate-limits). Telegram (core.telegram.org/bots/faq, an account being a
 * bot in one chat): about one message a second in a chat, and 20 a minute in a group; its 30 a second over all of a
 * bot's chats is left to Telegram's 429, whose retry_after a send then waits. Discord (an account being a channel's
 * webhook): 5 requests in 2 seconds per webhook and 30 messages a minute per channel, the limits its webhooks are
 * known to have (Discord's docs ask to read its rate-limit headers rather than write limits down: a 429's
 * retry_after is waited too).
 * Webhooks: none.
 */
const defaultBudgets: Record<SocialProvider, ReadonlyArray<BudgetWindow>> = {
  bluesky: [
    { limit: 5_000, cost: 3, seconds: 3_600 },
    { limit: 35_000, cost: 3, seconds: 86_400 },
    { limit: 30, cost: 1, seconds: 300 },
    { limit: 300, cost: 1, seconds: 86_400 }
  ],
  mastodon: [{ limit: 300, cost: 1, seconds: 300 }],
  webhook: [],
  x: [{ limit: 100, cost: 1, seconds: 900 }],
  telegram: [{ limit: 1, cost: 1, seconds: 1 }, { limit: 20, cost: 1, seconds: 60 }],
  discord: [{ limit: 5, cost: 1, seconds: 2 }, { limit: 30, cost: 1, seconds: 60 }]
}

const Windows = Schema.optional(Schema.Array(BudgetWindow).pipe(Schema.maxItems(8)))

const Overrides = Schema.parseJson(
  Schema.Struct({ bluesky: Windows, mastodon: Windows, webhook: Windows, x: Windows, telegram: Windows, discord: Windows }).pipe(
    Schema.filter((value) => !Array.isArray(value))
  )
)

/** An account's sends in the last `seconds` of each of its windows, in the order of the windows. */
export type Usage = ReadonlyArray<number>

/**
 * The sends per account that a provider allows, so that a burst of due posts neither gets an account
 * throttled nor fails: a send over budget waits until the window lets it through.
 */
export class ProviderBudgets extends Effect.Service<ProviderBudgets>()("ProviderBudgets", {
  effect: Effect.gen(function*() {
    const overrides = yield* Config.string("PROVIDER_BUDGETS").pipe(
      Config.withDefault("{}"),
      Config.mapOrFail((text) =>
        Either.mapLeft(
          Schema.decodeEither(Overrides, { onExcessProperty: "error" })(text),
          () =>
            ConfigError.InvalidData(
              ["PROVIDER_BUDGETS"],
              "must be a JSON object of windows per provider, e.g. {\"mastodon\":[{\"limit\":300,\"cost\":1,\"seconds\":300}]}"
            )
        )
      )
    )
    const budgets = { ...defaultBudgets, ...overrides } as Record<SocialProvider, ReadonlyArray<BudgetWindow>>
    // Up to this much later than its budget allows, so that accounts freed at one instant do not all go at once.
    const jitterMs = yield* Config.integer("PROVIDER_BUDGET_JITTER_MS").pipe(Config.withDefault(2_000))

    const windowsOf = (provider: SocialProvider): ReadonlyArray<BudgetWindow> => budgets[provider]

    /**
     * Whether one more send fits every window: `overIn` answers the first window it does not fit, whose
     * oldest sends must age out first.
     */
    const overIn = (provider: SocialProvider, usage: Usage): BudgetWindow | undefined =>
      windowsOf(provider).find((window, i) => (usage[i] + 1) * window.cost > window.limit)

    /** How many of a full window's sends must age out before one more fits. */
    const toAgeOut = (window: BudgetWindow, sends: number) => sends + 1 - Math.floor(window.limit / window.cost)

    const jitter = () => Math.floor(Math.random() * (jitterMs + 1))

    return { windowsOf, overIn, toAgeOut, jitter } as const
  })
}) {}
