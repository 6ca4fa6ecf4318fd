import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { CreditCosts } from "../src/Credits/Costs.js"

const providers = ["bluesky", "mastodon", "webhook"] as const

const costsWith = (creditCosts: string | undefined) =>
  CreditCosts.pipe(
    Effect.provide(CreditCosts.Default.pipe(Layer.provide(Layer.setConfigProvider(
      ConfigProvider.fromMap(new Map(creditCosts === undefined ? [] : [["CREDIT_COSTS", creditCosts]]))
    ))))
  )

describe("CREDIT_COSTS", () => {
  it.effect("defaults: a publish and a live analytics read cost 1 on Bluesky and Mastodon, 0 on a webhook", () =>
    Effect.gen(function*() {
      const costs = yield* costsWith(undefined)
      expect(providers.map(costs.costOf)).toEqual([1, 1, 0])
      expect(providers.map(costs.analyticsCostOf)).toEqual([1, 1, 0])
      // Telegram tells a bot no figures: nothing to read, nothing to charge.
      expect([costs.costOf("telegram"), costs.analyticsCostOf("telegram")]).toEqual([1, 0])
      expect((yield* costsWith(`{"telegram":3}`)).costOf("telegram")).toBe(3)
    }))

  it.effect("the publish prices at the top level keep their meaning; analytics reads are priced under `analytics`", () =>
    Effect.gen(function*() {
      const before = yield* costsWith(`{"bluesky":2,"webhook":1}`)
      expect([before.costOf("bluesky"), before.costOf("mastodon"), before.costOf("webhook")]).toEqual([2, 1, 1])
      expect(before.analyticsCostOf("bluesky")).toBe(1)
      const both = yield* costsWith(`{"mastodon":0,"analytics":{"bluesky":3,"mastodon":0}}`)
      expect([both.costOf("bluesky"), both.costOf("mastodon")]).toEqual([1, 0])
      expect([both.analyticsCostOf("bluesky"), both.analyticsCostOf("mastodon"), both.analyticsCostOf("webhook")]).toEqual([3, 0, 0])
    }))

  it.effect("refuses what is not whole credits per provider, or a name it does not know (a typo), naming the setting", () =>
    Effect.gen(function*() {
      const typos = [`{"blusky":2}`, `{"analytics":{"mastdon":1}}`, `{"analytic":{"bluesky":1}}`]
      for (const bad of [`{"bluesky":-1}`, `{"analytics":{"mastodon":1.5}}`, `{"analytics":3}`, `not json`, ...typos]) {
        const error = yield* Effect.flip(costsWith(bad))
        expect(String(error), bad).toContain("CREDIT_COSTS")
        expect(String(error), bad).toContain("must be a JSON object of whole credits per provider")
      }
    }))
})
