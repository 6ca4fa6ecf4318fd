import { Effect } from "effect"
import { TokenRenewal } from "../SocialAccounts/TokenRenewal.js"
import { SocialProviders } from "../Providers/Registry.js"
import { type AccountCounts, type Engagement, ProviderError, type SocialAccountOf } from "../Providers/SocialProvider.js"
import { ProviderBudgets } from "../Providers/Budgets.js"
import { transactionally } from "../Database/Transaction.js"
import { AnalyticsRepo, type ReadableAccount } from "./Repo.js"

/** Why an account could not be read now. */
export type ReadFailure =
  | { readonly _tag: "OverBudget" }
  | { readonly _tag: "Refused"; readonly message: string; readonly error: ProviderError | null }

const refused = (error: ProviderError | { readonly message: string }): ReadFailure => ({
  _tag: "Refused",
  message: error.message,
  error: error instanceof ProviderError ? error : null
})

/**
 * Reads engagement and counts from an account's provider, each call within the account's budgets: a call
 * counts as one send in each of the provider's windows (`PROVIDER_BUDGETS`), with the account's publishes.
 * A provider without analytics (a webhook) is never called.
 */
export class AnalyticsReader extends Effect.Service<AnalyticsReader>()("AnalyticsReader", {
  effect: Effect.gen(function*() {
    const providers = yield* SocialProviders
    const renewal = yield* TokenRenewal
    const budgets = yield* ProviderBudgets
    const repo = yield* AnalyticsRepo

    const analyticsOf = (account: ReadableAccount) => providers.get(account.provider).analytics

    const open = (account: ReadableAccount) =>
      renewal.open(account.id, account.ciphertext).pipe(
        Effect.map((credentials): SocialAccountOf => ({ id: account.id, credentials })),
        Effect.mapError(refused)
      )

    /** Takes one call from the account's budgets at `now`, or fails OverBudget. */
    const takeCall = (account: ReadableAccount, now: Date) =>
      transactionally(Effect.gen(function*() {
        const usage = yield* repo.lockUsage(account.id, now, budgets.windowsOf(account.provider))
        if (budgets.overIn(account.provider, usage) !== undefined) return yield* Effect.fail<ReadFailure>({ _tag: "OverBudget" })
        yield* repo.recordRead(account.id, now)
      }))

    const call = <A>(account: ReadableAccount, now: Date, read: (opened: SocialAccountOf) => Effect.Effect<A, ProviderError>) =>
      Effect.gen(function*() {
        const opened = yield* open(account)
        yield* takeCall(account, now)
        return yield* read(opened).pipe(Effect.mapError(refused))
      })

    /** The engagement of the account's posts, in as few calls as the provider allows; one it no longer has is left out. */
    const engagement = (account: ReadableAccount, externalIds: ReadonlyArray<string>, now: Date) =>
      Effect.gen(function*() {
        const analytics = analyticsOf(account)
        if (analytics === null || externalIds.length === 0) return [] as ReadonlyArray<Engagement>
        const batches: Array<ReadonlyArray<string>> = []
        for (let i = 0; i < externalIds.length; i += analytics.batchSize) batches.push(externalIds.slice(i, i + analytics.batchSize))
        const read = yield* Effect.forEach(batches, (batch) =>
          call(account, now, (opened) => analytics.engagement(opened, batch)))
        return read.flat()
      })

    /** The account's counts, or null for a provider that has none. */
    const counts = (account: ReadableAccount, now: Date) =>
      Effect.gen(function*() {
        const analytics = analyticsOf(account)
        if (analytics === null) return null as AccountCounts | null
        return yield* call(account, now, (opened) => analytics.accountCounts(opened))
      })

    return { hasAnalytics: (account: ReadableAccount) => analyticsOf(account) !== null, engagement, counts } as const
  }),
  dependencies: [AnalyticsRepo.Default, ProviderBudgets.Default, TokenRenewal.Default]
}) {}
