import {
  Conflict,
  type PostId,
  type SocialAccountId,
  type TeamId,
  type UnpublishRequest,
  type UnpublishResponse,
  type UnpublishResult
} from "@postline/domain"
import { Duration, Effect, Fiber, Option } from "effect"
import { authorize, type Authorized } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { PostsPolicy } from "../Posts/Policy.js"
import { PostsRepo } from "../Posts/Repo.js"
import { postNotFound } from "../Posts/Service.js"
import { SocialProviders } from "../Providers/Registry.js"
import { TokenRenewal } from "../SocialAccounts/TokenRenewal.js"
import { SocialAccountsRepo } from "../SocialAccounts/Repo.js"
import { type DeleteOutcome, DeletionsRepo } from "./DeletionsRepo.js"
import { summaryOf } from "./Outcome.js"
import { outcomeOf } from "./PostNow.js"
import { SendScope } from "./SendScope.js"
import { referenceOf, SentPartsRepo } from "./SentPartsRepo.js"
import { PublishSettings } from "./Settings.js"
import { TargetsRepo } from "./TargetsRepo.js"

/** Whether an unpublish's answer is its last word: no account of it is still being taken down. */
export const isFinalUnpublish = (answer: UnpublishResponse) => answer.results.every((result) => result.status !== "deleting")

/** A delete that got no answer in time: it stays deleting, and the recovery asks the network again. */
type Unanswered = { readonly _tag: "Unanswered" }

/**
 * Taking a published post down from its accounts: every part that went out, and its first comment, deleted at
 * the network under one provider key per account, so that a delete asked again (a retry, the recovery) is the
 * same delete. Credits spent publishing are not given back.
 */
export class Unpublishing extends Effect.Service<Unpublishing>()("Unpublishing", {
  effect: Effect.gen(function*() {
    const posts = yield* PostsRepo
    const policy = yield* PostsPolicy
    const deletions = yield* DeletionsRepo
    const targets = yield* TargetsRepo
    const sentParts = yield* SentPartsRepo
    const accounts = yield* SocialAccountsRepo
    const providers = yield* SocialProviders
    const renewal = yield* TokenRenewal
    const settings = yield* PublishSettings
    const { scope } = yield* SendScope

    const refused = (socialAccountId: SocialAccountId, why: "post_not_published" | "post_deleting" | "post_publishing") =>
      new Conflict({
        message: why === "post_deleting"
          ? `The post is being taken down from account ${socialAccountId} already`
          : why === "post_publishing"
          ? `The post is being sent to account ${socialAccountId}: take it down once it is published`
          : `The post is not published to account ${socialAccountId}: there is nothing to take down`,
        reason: why
      })

    /** In one transaction, the post locked: checks every account is published to, and starts their deletes. */
    const start = (teamId: TeamId, postId: PostId, asked: ReadonlyArray<SocialAccountId> | undefined) =>
      authorize(policy.canPublish(teamId, { lock: true }))(() =>
        Effect.gen(function*() {
          const post = Option.getOrUndefined(yield* posts.lockForPublishing(teamId, postId))
          if (post === undefined) return yield* postNotFound(postId)
          if (post.status === "scheduled") {
            return yield* new Conflict({
              message: `Post ${postId} is scheduled: unschedule it; nothing of it is published yet`,
              reason: "post_scheduled"
            })
          }
          const statuses = new Map((yield* deletions.statusesOf(postId)).map((target) => [target.socialAccountId as string, target.status]))
          const chosen = asked ?? [...statuses].flatMap(([id, status]) => status === "published" ? [id as SocialAccountId] : [])
          if (chosen.length === 0) {
            return yield* new Conflict({ message: `Post ${postId} is published to no account`, reason: "post_not_published" })
          }
          for (const id of chosen) {
            const status = statuses.get(id)
            if (status === "deleting") return yield* refused(id, "post_deleting")
            if (status === "pending") return yield* refused(id, "post_publishing")
            if (status !== "published") return yield* refused(id, "post_not_published")
          }
          const started = yield* Effect.forEach(chosen, (id) =>
            Effect.map(deletions.startDelete(postId, id), (attempt) => ({ socialAccountId: id, attempt })))
          yield* targets.refreshStatus(postId)
          return started
        })).pipe(transactionally)

    const asked = <E>(call: Effect.Effect<void, E>) =>
      call.pipe(Effect.interruptible, Effect.timeoutFail({ duration: settings.timeout, onTimeout: (): Unanswered => ({ _tag: "Unanswered" }) }))

    /** Asks the network to take down what the post became on the account, and records its answer. */
    const deleteAt = (
      teamId: TeamId,
      postId: PostId,
      socialAccountId: SocialAccountId,
      attempt: number
    ): Effect.Effect<UnpublishResult, never, Authorized<"Post", "publish">> =>
      Effect.gen(function*() {
        const [account] = yield* accounts.forPublishing(teamId, [socialAccountId])
        const outcome: DeleteOutcome | Unanswered = account === undefined
          ? {
            _tag: "Failed",
            error: { category: "unknown", message: "The account was removed: take the post down at the network", retryable: false }
          }
          : yield* Effect.gen(function*() {
            const credentials = yield* renewal.open(account.id, account.ciphertext)
            const sent = [...(yield* sentParts.sentParts(postId, socialAccountId)).values()]
              .filter((part) => part.status === "published")
            // Replies before what they answer: the first comment, then the thread from its end.
            const parts = [...sent.filter((part) => part.position === 0), ...sent.filter((part) => part.position > 0).reverse()]
            yield* asked(providers.get(account.provider).remove({ id: account.id, credentials }, {
              postId,
              idempotencyKey: `${postId}:${socialAccountId}:deleted`,
              parts: parts.map(referenceOf)
            }))
            return { _tag: "Deleted" } as const
          }).pipe(
            Effect.catchTags({
              Unanswered: (unanswered) => Effect.succeed<DeleteOutcome | Unanswered>(unanswered),
              ProviderError: (error) =>
                Effect.succeed<DeleteOutcome | Unanswered>({
                  _tag: "Failed",
                  error: { category: error.category, message: error.providerMessage, retryable: error.retryable }
                }),
              // The account needs reconnecting: nothing was asked of the network.
              CredentialsUnreadable: ({ message }) =>
                Effect.succeed<DeleteOutcome | Unanswered>({
                  _tag: "Failed",
                  error: { category: "auth", message, retryable: false }
                })
            })
          )
        if (outcome._tag === "Unanswered") {
          return {
            socialAccountId,
            status: "deleting",
            error: {
              category: "transient",
              message: `No answer within ${Duration.format(settings.timeout)}: Postline asks again`,
              retryable: true
            }
          }
        }
        const summary = outcome._tag === "Deleted"
          ? "Deleted"
          : summaryOf({ _tag: "Failed", error: outcome.error })
        yield* deletions.finishDelete(postId, socialAccountId, attempt, outcome, summary)
        return outcome._tag === "Deleted"
          ? { socialAccountId, status: "deleted", error: null }
          : { socialAccountId, status: "failed", error: outcome.error }
      })

    const unpublish = (teamId: TeamId, postId: PostId, { socialAccountIds }: UnpublishRequest) =>
      authorize(policy.canPublish(teamId, { lock: false }))(() =>
        Effect.gen(function*() {
          const started = yield* start(teamId, postId, socialAccountIds)
          // Run in the sends' scope, so that a shutdown lets them end rather than cutting them short.
          const results = yield* Effect.forEach(started, ({ attempt, socialAccountId }) =>
            deleteAt(teamId, postId, socialAccountId, attempt), { concurrency: "unbounded" }).pipe(
            Effect.tap(() => targets.refreshStatus(postId)),
            Effect.forkIn(scope),
            Effect.flatMap(Fiber.join)
          )
          const failed = results.filter((result) => result.status === "failed").length
          return { postId, results, outcome: outcomeOf(failed, results.length) } satisfies UnpublishResponse
        }))

    /**
     * The answer of an unpublish that began at `since` and has ended, read from its targets: none while any of
     * them is still deleting, or was not asked since (its request ended before it started a delete).
     */
    const unpublishAnswer = (teamId: TeamId, postId: PostId, { socialAccountIds }: UnpublishRequest, since: Date) =>
      authorize(policy.canPublish(teamId, { lock: false }))(() =>
        Effect.map(deletions.deletedSince(postId, socialAccountIds, since), (found) => {
          if (found.length === 0 || (socialAccountIds !== undefined && found.length !== socialAccountIds.length)) {
            return Option.none()
          }
          if (found.some((target) => target.status === "deleting")) return Option.none()
          const byId = new Map(found.map((target) => [target.socialAccountId as string, target]))
          const results = (socialAccountIds ?? found.map((target) => target.socialAccountId)).map((socialAccountId) => {
            const target = byId.get(socialAccountId)!
            return target.status === "deleted"
              ? { socialAccountId, status: "deleted", error: null } satisfies UnpublishResult
              : {
                socialAccountId,
                status: "failed",
                error: {
                  category: target.errorCategory ?? "unknown",
                  message: target.errorMessage ?? "The delete failed",
                  retryable: target.errorCategory === "transient" || target.errorCategory === "rate_limited"
                }
              } satisfies UnpublishResult
          })
          const failed = results.filter((result) => result.status === "failed").length
          return Option.some({ postId, results, outcome: outcomeOf(failed, results.length) } satisfies UnpublishResponse)
        }))

    return { unpublish, unpublishAnswer, deleteAt } as const
  }),
  dependencies: [
    TokenRenewal.Default,
    PostsRepo.Default,
    PostsPolicy.Default,
    DeletionsRepo.Default,
    TargetsRepo.Default,
    SentPartsRepo.Default,
    SocialAccountsRepo.Default,
    PublishSettings.Default,
    SendScope.Default
  ]
}) {}
