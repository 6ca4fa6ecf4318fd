import { Conflict, type OrganizationId, type PostId, type SocialAccountId, type TeamId } from "@postline/domain"
import { Effect, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { MediaSettings } from "../Assets/Settings.js"
import { CreditCosts } from "../Credits/Costs.js"
import { CreditsRepo, type Hold } from "../Credits/Repo.js"
import { transactionally } from "../Database/Transaction.js"
import { PostsPolicy } from "../Posts/Policy.js"
import type { AccountBody, BodyPart } from "../Posts/BodyRepo.js"
import { PostsRepo } from "../Posts/Repo.js"
import { accountNotFound, postNotFound } from "../Posts/Service.js"
import { SocialProviders } from "../Providers/Registry.js"
import type { PublishingAccount } from "../SocialAccounts/PublishingAccount.js"
import { SocialAccountsRepo } from "../SocialAccounts/Repo.js"
import { AttemptsRepo } from "./AttemptsRepo.js"
import { PublishBodies } from "./Bodies.js"
import { logTargetFailed } from "./Outcome.js"
import { TargetsRepo } from "./TargetsRepo.js"
import type { Check, Sending } from "./Types.js"

/**
 * What a publish needs before anything is sent: its accounts, the checks of its text and media against each
 * provider, the credits held for what is sent, and its targets recorded (to send now, or at a scheduled time).
 */
export class PublishPreparation extends Effect.Service<PublishPreparation>()("PublishPreparation", {
  effect: Effect.gen(function*() {
    const posts = yield* PostsRepo
    const targets = yield* TargetsRepo
    const attempts = yield* AttemptsRepo
    const accounts = yield* SocialAccountsRepo
    const credits = yield* CreditsRepo
    const costs = yield* CreditCosts
    const providers = yield* SocialProviders
    const policy = yield* PostsPolicy
    const mediaSettings = yield* MediaSettings
    const bodies = yield* PublishBodies

    /** The accounts, all of the team's, in the order asked: 404 naming the first that is not. */
    const accountsOf = (teamId: TeamId, ids: ReadonlyArray<SocialAccountId>) =>
      Effect.flatMap(accounts.forPublishing(teamId, ids), (found) => {
        const byId = new Map(found.map((account) => [account.id as string, account]))
        const missing = ids.find((id) => !byId.has(id))
        return missing === undefined ? Effect.succeed(ids.map((id) => byId.get(id)!)) : accountNotFound(missing)
      })

    /** The problems the account's provider would find in one part (named when the body has more than one). */
    const partProblems = (account: PublishingAccount, body: AccountBody, part: BodyPart): ReadonlyArray<string> => {
      const provider = providers.get(account.provider)
      const problems = [
        ...provider.validate(part.content, account.contentLimits),
        ...provider.validateMedia(part.media, account.contentLimits),
        // A webhook gets its media as links, which its receiver must be able to follow.
        ...(account.provider === "webhook" && part.media.length > 0 && mediaSettings.base === null
          ? [{ code: "media" as const, message: "A webhook gets media as links: the server needs a PUBLIC_URL to send them" }]
          : [])
      ].map((problem) => problem.message)
      const name = part.position === 0 ? "First comment" : body.parts.length > 1 ? `Part ${part.position}` : undefined
      return name === undefined ? problems : problems.map((problem) => `${name}: ${problem}`)
    }

    /**
     * What the provider would say before anything is sent: an account to reconnect, or a part or media it
     * refuses; else the price of what the account gets, one publish per part and one for a first comment.
     */
    const check = (body: AccountBody) => (account: PublishingAccount): Check => {
      if (account.status === "reconnect_required") {
        return {
          _tag: "Refused",
          account,
          error: { category: "auth", message: "The account needs reconnecting: update its credentials", retryable: false }
        }
      }
      const problems = [...body.parts, ...(body.firstComment ? [body.firstComment] : [])]
        .flatMap((part) => partProblems(account, body, part))
      const publishes = body.parts.length + (body.firstComment ? 1 : 0)
      return problems.length > 0
        ? {
          _tag: "Refused",
          account,
          error: { category: "invalid_content", message: problems.join("; "), retryable: false }
        }
        : { _tag: "Send", account, credits: costs.costOf(account.provider) * publishes, publishes }
    }

    /**
     * Checks, holds credits and records every target in one transaction with
     * the post locked, so that two publishes of one post take turns: 404, 409 or
     * 402 leave nothing behind. Publishing now starts an attempt per target to
     * send; scheduling leaves them pending and due at `at`, under a new schedule
     * version, and gives back what an earlier schedule held. Answers the checks
     * and the targets to send now.
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
                message: `Post ${postId} is scheduled: unschedule it first, or schedule it again for another time`,
                reason: "post_scheduled"
              })
            }
            yield* releaseWaiting(team.organizationId, postId)
          }
          if (when._tag === "At" && post.status === "publishing") {
            return yield* new Conflict({
              message: `Post ${postId} is being published: schedule it once it is done`,
              reason: "post_publishing"
            })
          }
          const [busy] = yield* targets.busyTargets(postId, chosen.map((account) => account.id))
          if (busy !== undefined) {
            return yield* busy.status === "deleting" || busy.status === "deleted"
              ? new Conflict({
                message: `Post ${postId} was taken down from account ${busy.socialAccountId}: it is not published there again`,
                reason: "post_deleted"
              })
              : new Conflict({
                message: `Post ${postId} was already ${busy.status === "published" ? "published" : "being published"} to ` +
                  `account ${busy.socialAccountId}: publish again only to the accounts that failed`,
                reason: busy.status === "published" ? "already_published" : "post_publishing"
              })
          }
          // Providers check and receive the texts as sent: with their links tracked, the short links.
          const bodiesByAccount = yield* bodies.bodiesOf({ ...post, id: postId, teamId }, chosen.map((account) => account.id), { lock: true })
          const checks = chosen.map((account) => check(bodiesByAccount.get(account.id)!)(account))
          const toSend = checks.filter((checked) => checked._tag === "Send")
          const holds = toSend.map((checked): Hold => ({ postId, socialAccountId: checked.account.id, amount: checked.credits }))
          yield* credits.reserve(team.organizationId, holds)
          for (const checked of checks) {
            if (checked._tag === "Refused") yield* targets.failBeforeSending(postId, checked.account.id, checked.error)
          }
          if (when._tag === "At") {
            for (const checked of toSend) yield* targets.awaitTarget(postId, checked.account.id, checked.credits, when.at)
            if (toSend.length > 0) yield* targets.markScheduled(postId, when.at)
            yield* targets.refreshStatus(postId)
            return { checks, sending: [] }
          }
          const sending = yield* Effect.forEach(toSend, (checked, index) =>
            Effect.map(attempts.startAttempt(postId, checked.account.id, checked.credits, false), (started): Sending => ({
              organizationId: team.organizationId,
              postId,
              body: bodiesByAccount.get(checked.account.id)!,
              account: checked.account,
              ...started,
              hold: holds[index]
            })))
          yield* targets.refreshStatus(postId)
          return { checks, sending }
        })).pipe(
        transactionally,
        // What failed before anything was sent failed for good (an account to reconnect, a text refused).
        Effect.tap(({ checks }) =>
          Effect.forEach(checks, (checked) =>
            checked._tag === "Refused"
              ? logTargetFailed({ postId, socialAccountId: checked.account.id, provider: checked.account.provider }, checked.error)
              : Effect.void, { discard: true })
        )
      )

    /**
     * Gives back what the targets waiting for a schedule hold, and forgets them (those sent before are failed
     * again) and the schedule.
     */
    const releaseWaiting = (organizationId: OrganizationId, postId: PostId) =>
      Effect.gen(function*() {
        for (const waiting of yield* targets.waitingTargets(postId)) {
          yield* credits.settle(organizationId, { postId, socialAccountId: waiting.socialAccountId, amount: waiting.creditsReserved }, "release")
          yield* (waiting.sentBefore ? targets.stopWaiting : targets.dropTarget)(postId, waiting.socialAccountId)
        }
        yield* targets.clearSchedule(postId)
      })

    return { accountsOf, check, prepare, releaseWaiting } as const
  }),
  dependencies: [
    PostsRepo.Default,
    TargetsRepo.Default,
    AttemptsRepo.Default,
    SocialAccountsRepo.Default,
    CreditsRepo.Default,
    CreditCosts.Default,
    PostsPolicy.Default,
    MediaSettings.Default,
    PublishBodies.Default
  ]
}) {}
