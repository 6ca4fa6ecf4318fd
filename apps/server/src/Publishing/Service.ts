import {
  Conflict,
  type Estimate,
  type OrganizationId,
  type PostId,
  type PostNowResponse,
  type PublishError,
  type PublishOutcome,
  type PublishResult,
  type SocialAccountId,
  type TargetAccounts,
  type TeamId
} from "@postline/domain"
import { Config, Duration, Effect, Either, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { CreditCosts } from "../Credits/Costs.js"
import { CreditsPolicy } from "../Credits/Policy.js"
import { CreditsRepo, type Hold } from "../Credits/Repo.js"
import { transactionally } from "../Database/Transaction.js"
import { Links } from "../Links/Service.js"
import { PostsPolicy } from "../Posts/Policy.js"
import { PostsRepo } from "../Posts/Repo.js"
import { accountNotFound, postNotFound } from "../Posts/Service.js"
import { credentialsFromJson } from "../Providers/Credentials.js"
import { CredentialsCipher } from "../Providers/CredentialsCipher.js"
import { SocialProviders } from "../Providers/Registry.js"
import { ProviderError } from "../Providers/SocialProvider.js"
import { type PublishingAccount, SocialAccountsRepo } from "../SocialAccounts/Repo.js"
import { type AttemptOutcome, PublishingRepo } from "./Repo.js"

/** One account of a publish, as checked before anything is sent: to send (with its price), or failed already. */
type Check =
  | { readonly _tag: "Send"; readonly account: PublishingAccount; readonly credits: number }
  | { readonly _tag: "Refused"; readonly account: PublishingAccount; readonly error: PublishError }

/** A target about to be sent: its attempt is recorded and its credits held. */
export interface Sending {
  readonly organizationId: OrganizationId
  readonly postId: PostId
  readonly content: string
  readonly account: PublishingAccount
  readonly attempt: number
  readonly hold: Hold
}

const outcomeOf = (results: ReadonlyArray<PublishResult>): PublishOutcome => {
  const failed = results.filter((result) => result.status === "failed").length
  return failed === 0 ? "none_failed" : failed === results.length ? "all_failed" : "partially_failed"
}

const asPublishError = (error: ProviderError): PublishError => ({
  category: error.category,
  message: error.providerMessage,
  retryable: error.retryable
})

/**
 * Publishing a post to accounts: the checks before anything is sent, the
 * credits held for what is sent, the provider calls, and the record of each.
 * `publishTarget` is the one path by which a target is sent, whoever sends it.
 */
export class Publishing extends Effect.Service<Publishing>()("Publishing", {
  effect: Effect.gen(function*() {
    const posts = yield* PostsRepo
    const targets = yield* PublishingRepo
    const accounts = yield* SocialAccountsRepo
    const credits = yield* CreditsRepo
    const costs = yield* CreditCosts
    const providers = yield* SocialProviders
    const cipher = yield* CredentialsCipher
    const policy = yield* PostsPolicy
    const creditsPolicy = yield* CreditsPolicy
    const links = yield* Links
    const timeout = yield* Config.integer("PUBLISH_TIMEOUT_SECONDS").pipe(Config.withDefault(30), Config.map(Duration.seconds))
    const concurrency = 8

    /** The accounts, all of the team's, in the order asked: 404 naming the first that is not. */
    const accountsOf = (teamId: TeamId, ids: ReadonlyArray<SocialAccountId>) =>
      Effect.flatMap(accounts.forPublishing(teamId, ids), (found) => {
        const byId = new Map(found.map((account) => [account.id as string, account]))
        const missing = ids.find((id) => !byId.has(id))
        return missing === undefined ? Effect.succeed(ids.map((id) => byId.get(id)!)) : accountNotFound(missing)
      })

    /** What the provider would say before anything is sent: an account to reconnect, or a text it refuses. */
    const check = (content: string) => (account: PublishingAccount): Check => {
      if (account.status === "reconnect_required") {
        return {
          _tag: "Refused",
          account,
          error: { category: "auth", message: "The account needs reconnecting: update its credentials", retryable: false }
        }
      }
      const problems = providers.get(account.provider).validate(content, account.contentLimits)
      return problems.length > 0
        ? {
          _tag: "Refused",
          account,
          error: { category: "invalid_content", message: problems.map((problem) => problem.message).join("; "), retryable: false }
        }
        : { _tag: "Send", account, credits: costs.costOf(account.provider) }
    }

    /**
     * Sends one target and records what became of it: the attempt, the target,
     * its credits spent or released, and an account whose credentials were
     * refused. The provider gets a key derived from the post and the account,
     * the same on every attempt, so that it can tell a repeat.
     */
    const publishTarget = (sending: Sending, options: { readonly final: boolean } = { final: true }) =>
      Effect.gen(function*() {
        const { account, postId } = sending
        const sent = yield* Effect.orDie(Effect.flatMap(cipher.decrypt(account.ciphertext), credentialsFromJson)).pipe(
          Effect.flatMap((credentials) =>
            providers.publish(
              { id: account.id, credentials },
              { postId, text: sending.content, idempotencyKey: `${postId}:${account.id}` }
            )
          ),
          // A bug of ours must not leave the target pending with its credits held: it fails, and is logged.
          Effect.catchAllDefect((defect) =>
            Effect.zipRight(
              Effect.logError("Publishing failed unexpectedly", defect),
              Effect.fail(
                new ProviderError({
                  provider: account.provider,
                  category: "unknown",
                  retryable: false,
                  providerMessage: "Postline failed to send this post"
                })
              )
            )
          ),
          Effect.timeoutFail({
            duration: timeout,
            onTimeout: () =>
              new ProviderError({
                provider: account.provider,
                category: "transient",
                retryable: true,
                providerMessage: `No answer within ${Duration.format(timeout)}`
              })
          }),
          Effect.either
        )
        const outcome: AttemptOutcome = Either.match(sent, {
          onRight: (published) => ({ _tag: "Published", published }),
          onLeft: (error) => ({ _tag: "Failed", error: asPublishError(error) })
        })
        yield* Effect.gen(function*() {
          // A failure that may pass is tried again later, unless this was the last attempt.
          if (outcome._tag === "Failed" && outcome.error.retryable && !options.final) {
            return yield* targets.recordRetry(postId, account.id, sending.attempt, outcome.error)
          }
          yield* targets.finishAttempt(postId, account.id, sending.attempt, outcome)
          yield* credits.settle(sending.organizationId, sending.hold, outcome._tag === "Published" ? "spend" : "release")
          if (outcome._tag === "Failed" && outcome.error.category === "auth") {
            yield* accounts.recordAuthFailure(account.id, outcome.error.message)
          }
        }).pipe(transactionally)
        return { outcome, retryAfterSeconds: Either.isLeft(sent) ? sent.left.retryAfterSeconds : undefined }
      })

    /**
     * Checks, holds credits and records every target in one transaction with
     * the post locked, so that two publishes of one post take turns: 404, 409 or
     * 402 leave nothing behind. Publishing now starts an attempt per target to
     * send; scheduling leaves them pending for `at`, under a new schedule
     * version, and gives back what an earlier schedule held. Answers the checks,
     * the targets to send now, and the version of a schedule.
     */
    const prepare = (
      teamId: TeamId,
      postId: PostId,
      chosen: ReadonlyArray<PublishingAccount>,
      when: { readonly _tag: "Now" } | { readonly _tag: "At"; readonly at: Date }
    ) =>
      authorize(policy.canPublish(teamId, { lock: true }))((team) =>
        Effect.gen(function*() {
          const post = Option.getOrUndefined(yield* posts.lockForPublishing(teamId, postId))
          if (post === undefined) return yield* postNotFound(postId)
          const scheduled = post.status === "scheduled"
          if (scheduled) {
            if (when._tag === "Now") {
              return yield* new Conflict({
                message: `Post ${postId} is scheduled: unschedule it first, or schedule it again for another time`
              })
            }
            yield* releaseWaiting(team.organizationId, postId)
          }
          const busy = (yield* targets.targetsOf(postId, chosen.map((account) => account.id)))
            .find((target) => target.status === "published" || (target.status === "pending" && !target.stale))
          if (busy !== undefined) {
            return yield* new Conflict({
              message: `Post ${postId} was already ${busy.status === "published" ? "published" : "being published"} to ` +
                `account ${busy.socialAccountId}: publish again only to the accounts that failed`
            })
          }
          // Providers check and receive the text as sent: with its links tracked, the short links.
          const text = yield* links.linksFor({ ...post, id: postId, teamId })
          const checks = chosen.map(check(text))
          const toSend = checks.filter((checked) => checked._tag === "Send")
          const holds = toSend.map((checked): Hold => ({ postId, socialAccountId: checked.account.id, amount: checked.credits }))
          yield* credits.reserve(team.organizationId, holds)
          for (const checked of checks) {
            if (checked._tag === "Refused") yield* targets.failBeforeSending(postId, checked.account.id, checked.error)
          }
          if (when._tag === "At") {
            for (const checked of toSend) yield* targets.awaitTarget(postId, checked.account.id, checked.credits)
            const version = toSend.length > 0 ? yield* targets.markScheduled(postId, when.at) : undefined
            yield* targets.refreshStatus(postId)
            return { checks, sending: [], version, replaced: scheduled ? post.scheduleVersion : undefined }
          }
          const sending = yield* Effect.forEach(toSend, (checked, index) =>
            Effect.map(targets.startAttempt(postId, checked.account.id, checked.credits), (attempt): Sending => ({
              organizationId: team.organizationId,
              postId,
              content: text,
              account: checked.account,
              attempt,
              hold: holds[index]
            })))
          yield* targets.refreshStatus(postId)
          return { checks, sending, version: undefined, replaced: undefined }
        })).pipe(transactionally)

    /** Gives back what the targets waiting for a schedule hold, and forgets them and the schedule. */
    const releaseWaiting = (organizationId: OrganizationId, postId: PostId) =>
      Effect.gen(function*() {
        for (const waiting of yield* targets.waitingTargets(postId)) {
          yield* credits.settle(organizationId, { postId, socialAccountId: waiting.socialAccountId, amount: waiting.creditsReserved }, "release")
          yield* targets.dropTarget(postId, waiting.socialAccountId)
        }
        yield* targets.clearSchedule(postId)
      })

    const postNow = (teamId: TeamId, postId: PostId, { socialAccountIds }: TargetAccounts) =>
      authorize(policy.canPublish(teamId, { lock: false }))(() =>
        Effect.gen(function*() {
          const chosen = yield* accountsOf(teamId, socialAccountIds)
          const { checks, sending } = yield* prepare(teamId, postId, chosen, { _tag: "Now" })
          // Once credits are held, the publish runs to its end even if the client goes away.
          const outcomes = yield* Effect.forEach(sending, (target) => Effect.map(publishTarget(target), (sent) => sent.outcome), {
            concurrency
          }).pipe(
            Effect.tap(() => targets.refreshStatus(postId)),
            Effect.uninterruptible
          )
          const outcomeOf_ = new Map(sending.map((sent, index) => [sent.account.id as string, { sent, outcome: outcomes[index] }]))
          const results = checks.map((checked): PublishResult => {
            const done = outcomeOf_.get(checked.account.id)
            if (checked._tag === "Refused" || done === undefined) {
              const error = checked._tag === "Refused" ? checked.error : null
              return { socialAccountId: checked.account.id, status: "failed", externalId: null, url: null, error, creditsSpent: 0 }
            }
            return done.outcome._tag === "Published"
              ? {
                socialAccountId: checked.account.id,
                status: "published",
                externalId: done.outcome.published.externalId,
                url: done.outcome.published.url,
                error: null,
                creditsSpent: done.sent.hold.amount
              }
              : {
                socialAccountId: checked.account.id,
                status: "failed",
                externalId: null,
                url: null,
                error: done.outcome.error,
                creditsSpent: 0
              }
          })
          return { postId, results, outcome: outcomeOf(results) } satisfies PostNowResponse
        }))

    /** What `postNow` would hold for these accounts, and whether the organization has it: reads only. */
    const estimate = (teamId: TeamId, postId: PostId, { socialAccountIds }: TargetAccounts) =>
      authorize(policy.canRead(teamId))((team) =>
        Effect.gen(function*() {
          const post = Option.getOrUndefined(yield* posts.find(teamId, postId))
          if (post === undefined) return yield* postNotFound(postId)
          const chosen = yield* authorize(policy.canPublish(teamId, { lock: false }))(() => accountsOf(teamId, socialAccountIds))
          const text = links.preview(post.content, post.linkTracking ?? team.linkTrackingDefault)
          const perAccount = chosen.map(check(text)).map((checked) => ({
            socialAccountId: checked.account.id,
            credits: checked._tag === "Send" ? checked.credits : 0
          }))
          const total = perAccount.reduce((sum, account) => sum + account.credits, 0)
          const balance = yield* authorize(creditsPolicy.canView(team.organizationId))(() => credits.balanceOf(team.organizationId))
          const available = Option.match(balance, { onNone: () => 0, onSome: (found) => found.available })
          return { total, perAccount, available, sufficient: total <= available } satisfies Estimate
        }))

    return { postNow, estimate, accountsOf, prepare, releaseWaiting, publishTarget } as const
  }),
  dependencies: [
    PostsRepo.Default,
    PublishingRepo.Default,
    SocialAccountsRepo.Default,
    CreditsRepo.Default,
    CreditCosts.Default,
    PostsPolicy.Default,
    CreditsPolicy.Default,
    Links.Default
  ]
}) {}
