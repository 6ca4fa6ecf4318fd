import { HttpApiBuilder } from "@effect/platform"
import { PostlineApi, type ProviderRules } from "@postline/domain"
import { Effect, Layer } from "effect"
import { CreditCosts } from "../Credits/Costs.js"
import { ProviderBudgets } from "./Budgets.js"
import { providerRules } from "./Rules.js"

/**
 * GET /v1/providers: each provider's fixed rules (Rules.ts) with this server's configured prices and budgets,
 * read once at start like every setting, so the answer is the same for every caller.
 */
export const ProvidersHttpLive = HttpApiBuilder.group(PostlineApi, "providers", (handlers) =>
  Effect.gen(function*() {
    const costs = yield* CreditCosts
    const budgets = yield* ProviderBudgets
    const data: ReadonlyArray<ProviderRules> = Object.values(providerRules).map((rules) => ({
      ...rules,
      credits: { perPublish: costs.costOf(rules.provider) },
      budgets: budgets.windowsOf(rules.provider)
    }))
    return handlers.handle("listProviders", () => Effect.succeed({ data }))
  })).pipe(Layer.provide([CreditCosts.Default, ProviderBudgets.Default]))
