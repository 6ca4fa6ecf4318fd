import type {
  PostId,
  PostNowResponse,
  PublishOutcome,
  PublishResult,
  SocialAccountId,
  TargetAccounts,
  TeamId
} from "@postline/domain"
import { Effect, Fiber, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { PostsPolicy } from "../Posts/Policy.js"
import { PublishPreparation } from "./Prepare.js"
import { TargetSender } from "./Send.js"
import { SendScope } from "./SendScope.js"
import { type TargetResult, TargetsRepo } from "./TargetsRepo.js"

/** A target as the publish's answer shows it. */
const resultOf = (target: TargetResult): PublishResult => ({
  socialAccountId: target.socialAccountId,
  // Taken down since: it was published by this publish.
  status: target.status === "deleting" || target.status === "deleted" ? "published" : target.status,
  externalId: target.externalId,
  url: target.url,
  error: target.errorCategory === null
    ? null
    : { category: target.errorCategory, message: target.errorMessage ?? "", retryable: target.errorRetryable ?? false },
  creditsSpent: target.creditsSpent,
  parts: target.parts,
  firstComment: target.firstComment
})

/** What a publish or a schedule came to, from how many of its accounts failed. */
export const outcomeOf = (failed: number, all: number): PublishOutcome =>
  failed === 0 ? "none_failed" : failed === all ? "all_failed" : "partially_failed"

/** Targets of a publish, in the order of the request, with what the publish came to. */
const answerOf = (postId: PostId, ids: ReadonlyArray<SocialAccountId>, found: ReadonlyArray<TargetResult>): PostNowResponse => {
  const byId = new Map(found.map((target) => [target.socialAccountId as string, resultOf(target)]))
  const results = ids.map((id) => byId.get(id)!)
  const failed = results.filter((result) => result.status === "failed").length
  return {
    postId,
    results,
    outcome: outcomeOf(failed, results.length)
  }
}

/** Whether a post-now's answer is its last word: no account of it is still in doubt. */
export const isFinalAnswer = (answer: PostNowResponse) => answer.results.every((result) => result.status !== "pending")

/** Publishing a post now: its targets checked, their credits held, and all sent before the answer. */
export class PostNow extends Effect.Service<PostNow>()("PostNow", {
  effect: Effect.gen(function*() {
    const targets = yield* TargetsRepo
    const policy = yield* PostsPolicy
    const preparation = yield* PublishPreparation
    const sender = yield* TargetSender
    const { scope } = yield* SendScope

    const postNow = (teamId: TeamId, postId: PostId, { socialAccountIds }: TargetAccounts) =>
      authorize(policy.canPublish(teamId, { lock: false }))(() =>
        Effect.gen(function*() {
          const chosen = yield* preparation.accountsOf(teamId, socialAccountIds)
          const { sending } = yield* preparation.prepare(teamId, postId, chosen, { _tag: "Now" })
          // All at once (at most maxTargetsPerPublish), so that the answer comes within one timeout.
          yield* Effect.forEach(sending, (target) => sender.publishTarget(target, { retries: false }), {
            concurrency: "unbounded",
            discard: true
          }).pipe(
            Effect.zipRight(targets.refreshStatus(postId)),
            Effect.forkIn(scope),
            Effect.flatMap(Fiber.join)
          )
          return answerOf(postId, socialAccountIds, yield* targets.resultsOf(postId, socialAccountIds))
        }))

    /**
     * The answer of a post-now that began at `since` and has ended, read from its targets: none while any is
     * still being sent or was not recorded since (its request ended before it held anything).
     */
    const postNowAnswer = (teamId: TeamId, postId: PostId, { socialAccountIds }: TargetAccounts, since: Date) =>
      authorize(policy.canPublish(teamId, { lock: false }))(() =>
        Effect.map(targets.resultsOf(postId, socialAccountIds), (found) =>
          found.length === socialAccountIds.length &&
            found.every((target) => target.status !== "pending" && target.updatedAt.getTime() >= since.getTime())
            ? Option.some(answerOf(postId, socialAccountIds, found))
            : Option.none()))

    return { postNow, postNowAnswer } as const
  }),
  dependencies: [TargetsRepo.Default, PostsPolicy.Default, PublishPreparation.Default, TargetSender.Default, SendScope.Default]
}) {}
