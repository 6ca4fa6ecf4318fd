import { HttpApiBuilder } from "@effect/platform"
import { PostlineApi, type ProviderRules } from "@postline/domain"
import { Effect, Layer } from "effect"
import { CreditCosts } from "../Credits/Costs.js"
import { ProviderBudgets } from "./Budgets.js"
import { OAuthNetworks } from "./OAuthNetworks.js"
import { providerRules } from "./Rules.js"

/**
 * GET /v1/providers: each provider's fixed rules (Rules.ts) with this server's configured prices, budgets and sign-in,
 * read once at start like every setting, so the answer is the same for every caller.
 */
export const ProvidersHttpLive = HttpApiBuilder.group(PostlineApi, "providers", (handlers) =>
  Effect.gen(function*() {
    const costs = yield* CreditCosts
    const budgets = yield* ProviderBudgets
    const networks = yield* OAuthNetworks
    const oauthOf = (provider: ProviderRules["provider"]): ProviderRules["connect"]["oauth"] => {
      const network = networks.of(provider)
      return network === undefined ? null : {
        configured: network.missingSettings.length === 0,
        missingSettings: network.missingSettings,
        scopes: network.scopes,
        refreshes: network.refreshes
      }
    }
    const data: ReadonlyArray<ProviderRules> = Object.values(providerRules).map((rules) => ({
      ...rules,
      connect: { ...rules.connect, oauth: oauthOf(rules.provider) },
      credits: { perPublish: costs.costOf(rules.provider) },
      budgets: budgets.windowsOf(rules.provider)
    }))
    return handlers.handle("listProviders", () => Effect.succeed({ data }))
  })).pipe(Layer.provide([CreditCosts.Default, ProviderBudgets.Default]))
