import {
  type AccountAnalytics,
  AnalyticsSeriesDefault,
  type AnalyticsSeriesQuery,
  Conflict,
  type PostAnalytics,
  type PostId,
  type SocialAccountId,
  ServiceUnavailable,
  type TeamId,
  TooManyRequests
} from "@postline/domain"
import { Clock, Effect } from "effect"
import { authorize } from "../Access/Authorization.js"
import { CreditCosts } from "../Credits/Costs.js"
import { CreditEstimates } from "../Credits/Estimates.js"
import { type AnalyticsRead, CreditsRepo } from "../Credits/Repo.js"
import { transactionally } from "../Database/Transaction.js"
import { accountNotFound, postNotFound } from "../Posts/Service.js"
import { storeIdempotentAnswer } from "../Idempotency/Service.js"
import { AnalyticsPolicy } from "./Policy.js"
import { AnalyticsReader, type ReadFailure } from "./Reader.js"
import { AnalyticsRepo, type PublishedTarget, type ReadableAccount, type SeriesWindow } from "./Repo.js"

/** The series' window a query asks for; a refresh answers the default one. */
const windowOf = (query: AnalyticsSeriesQuery): SeriesWindow => ({
  limit: query.limit ?? AnalyticsSeriesDefault,
  before: query.before === undefined ? null : new Date(query.before)
})

/** A read that failed, as the caller is answered: nothing was charged or stored. */
const failedRead = (account: ReadableAccount) => (failure: ReadFailure) =>
  failure._tag === "OverBudget"
    ? new TooManyRequests({
      message: `The ${account.provider} account ${account.id} has used the calls its provider allows for now: try again later`
    })
    : failure.error?.retryable
    ? new ServiceUnavailable({ message: `The ${account.provider} account ${account.id} could not be read now: ${failure.message}` })
    : new Conflict({
      message: `The ${account.provider} account ${account.id} could not be read: ${failure.message}`,
      reason: "analytics_read_refused"
    })

/**
 * Analytics of a team's posts and accounts: the stored snapshots, free to read, and live reads (refresh),
 * paid in credits per account read. A refresh reads first, then charges, stores and answers (the answer
 * kept for its Idempotency-Key) in one transaction: a read that fails charges and stores nothing.
 */
export class Analytics extends Effect.Service<Analytics>()("Analytics", {
  effect: Effect.gen(function*() {
    const repo = yield* AnalyticsRepo
    const reader = yield* AnalyticsReader
    const policy = yield* AnalyticsPolicy
    const credits = yield* CreditsRepo
    const estimates = yield* CreditEstimates
    const costs = yield* CreditCosts

    const costOf = (account: ReadableAccount | null) =>
      account !== null && reader.hasAnalytics(account) ? costs.analyticsCostOf(account.provider) : 0

    const reading = "Reading analytics"

    /** 404 for an account read that was removed meanwhile; the others are kept until the transaction ends. */
    const requireAccounts = (teamId: TeamId, socialAccountIds: ReadonlyArray<SocialAccountId>) =>
      Effect.gen(function*() {
        const there = yield* repo.lockAccounts(teamId, socialAccountIds)
        const gone = socialAccountIds.find((id) => !there.has(id))
        if (gone !== undefined) return yield* accountNotFound(gone)
      })

    const publishedTargetsOf = (teamId: TeamId, postId: PostId) =>
      Effect.gen(function*() {
        if (!(yield* repo.postExists(teamId, postId))) return yield* postNotFound(postId)
        return yield* repo.publishedTargets(teamId, postId)
      })

    const postAnalyticsOf = (teamId: TeamId, postId: PostId, window: SeriesWindow) =>
      Effect.gen(function*() {
        const targets = yield* publishedTargetsOf(teamId, postId)
        const snapshots = yield* repo.postSnapshots(postId, window)
        const latest = new Map((yield* repo.latestPostSnapshots(postId)).map(({ socialAccountId, ...snapshot }) => [socialAccountId, snapshot]))
        return {
          postId,
          targets: targets.map((target) => ({
            socialAccountId: target.socialAccountId,
            provider: target.account?.provider ?? null,
            externalId: target.externalId,
            latest: latest.get(target.socialAccountId) ?? null,
            series: snapshots
              .filter((snapshot) => snapshot.socialAccountId === target.socialAccountId)
              .map(({ socialAccountId: _, ...snapshot }) => snapshot)
          }))
        } satisfies PostAnalytics
      })

    const getPost = (teamId: TeamId, postId: PostId, query: AnalyticsSeriesQuery = {}) =>
      authorize(policy.canRead(teamId))(() => postAnalyticsOf(teamId, postId, windowOf(query)))

    const postEstimate = (teamId: TeamId, postId: PostId) =>
      Effect.gen(function*() {
        const targets = yield* publishedTargetsOf(teamId, postId)
        return { targets, accounts: targets.map((target) => ({ socialAccountId: target.socialAccountId, credits: costOf(target.account) })) }
      })

    const estimatePost = (teamId: TeamId, postId: PostId) =>
      authorize(policy.canRead(teamId))((team) =>
        Effect.flatMap(postEstimate(teamId, postId), ({ accounts }) => estimates.estimate(team.organizationId, reading, accounts)))

    const refreshPost = (teamId: TeamId, postId: PostId) =>
      Effect.gen(function*() {
        const { organizationId, read, takenAt } = yield* authorize(policy.canRead(teamId))((team) =>
          Effect.gen(function*() {
            const { accounts, targets } = yield* postEstimate(teamId, postId)
            // 402 before anything is read, the spend cap's included (the charge checks again when it is made).
            yield* estimates.require(team.organizationId, reading, accounts)
            const readable = targets.filter((target): target is PublishedTarget & { readonly account: ReadableAccount } =>
              target.account !== null && reader.hasAnalytics(target.account)
            )
            const takenAt = new Date(yield* Clock.currentTimeMillis)
            const read = yield* authorize(policy.canRefresh(teamId, { lock: false }))(() =>
              Effect.forEach(readable, (target) =>
                reader.engagement(target.account, [target.externalId], takenAt).pipe(
                  Effect.mapError(failedRead(target.account)),
                  Effect.map((found) => ({ target, engagement: found[0] }))
                ), { concurrency: 4 })
            )
            return { organizationId: team.organizationId, read, takenAt }
          })
        )
        return yield* transactionally(authorize(policy.canRefresh(teamId, { lock: true }))(() =>
          Effect.gen(function*() {
            yield* requireAccounts(teamId, read.map(({ target }) => target.socialAccountId))
            const charges: Array<AnalyticsRead> = read.map(({ target }) => ({
              socialAccountId: target.socialAccountId,
              postId,
              amount: costOf(target.account)
            }))
            yield* credits.charge(organizationId, charges)
            yield* repo.addPostSnapshots(
              takenAt,
              read.flatMap(({ engagement, target }) =>
                engagement === undefined ? [] : [{ postId, socialAccountId: target.socialAccountId, engagement }]
              )
            )
            // The answer a retry with the same Idempotency-Key replays commits with the charge: never paid twice.
            return yield* Effect.tap(getPost(teamId, postId), storeIdempotentAnswer)
          })
        ))
      })

    const accountOf = (teamId: TeamId, socialAccountId: SocialAccountId) =>
      Effect.flatMap(repo.account(teamId, socialAccountId), (account) =>
        account === undefined ? Effect.fail(accountNotFound(socialAccountId)) : Effect.succeed(account))

    const getAccount = (teamId: TeamId, socialAccountId: SocialAccountId, query: AnalyticsSeriesQuery = {}) =>
      authorize(policy.canRead(teamId))(() =>
        Effect.gen(function*() {
          const account = yield* accountOf(teamId, socialAccountId)
          const series = yield* repo.accountSnapshots(socialAccountId, windowOf(query))
          const latest = yield* repo.latestAccountSnapshot(socialAccountId)
          return { socialAccountId, provider: account.provider, latest, series } satisfies AccountAnalytics
        }))

    const estimateAccount = (teamId: TeamId, socialAccountId: SocialAccountId) =>
      authorize(policy.canRead(teamId))((team) =>
        Effect.flatMap(accountOf(teamId, socialAccountId), (account) =>
          estimates.estimate(team.organizationId, reading, [{ socialAccountId: account.id, credits: costOf(account) }])))

    const refreshAccount = (teamId: TeamId, socialAccountId: SocialAccountId) =>
      Effect.gen(function*() {
        const toRead = yield* authorize(policy.canRead(teamId))((team) =>
          Effect.gen(function*() {
            const account = yield* accountOf(teamId, socialAccountId)
            // As for a post published only to webhooks: nothing to read, so a free answer of what is stored.
            if (!reader.hasAnalytics(account)) return null
            yield* estimates.require(team.organizationId, reading, [{ socialAccountId: account.id, credits: costOf(account) }])
            const takenAt = new Date(yield* Clock.currentTimeMillis)
            const counts = yield* authorize(policy.canRefresh(teamId, { lock: false }))(() =>
              reader.counts(account, takenAt).pipe(Effect.mapError(failedRead(account)))
            )
            return { counts: { account, counts: counts! }, organizationId: team.organizationId, takenAt }
          })
        )
        if (toRead === null) return yield* getAccount(teamId, socialAccountId)
        const { counts, organizationId, takenAt } = toRead
        return yield* transactionally(authorize(policy.canRefresh(teamId, { lock: true }))(() =>
          Effect.gen(function*() {
            yield* requireAccounts(teamId, [socialAccountId])
            yield* credits.charge(organizationId, [{ socialAccountId, amount: costOf(counts.account) }])
            yield* repo.addAccountSnapshot(socialAccountId, takenAt, counts.counts)
            return yield* Effect.tap(getAccount(teamId, socialAccountId), storeIdempotentAnswer)
          })
        ))
      })

    return { getPost, estimatePost, refreshPost, getAccount, estimateAccount, refreshAccount } as const
  }),
  dependencies: [
    AnalyticsRepo.Default,
    AnalyticsReader.Default,
    AnalyticsPolicy.Default,
    CreditsRepo.Default,
    CreditEstimates.Default,
    CreditCosts.Default
  ]
}) {}
