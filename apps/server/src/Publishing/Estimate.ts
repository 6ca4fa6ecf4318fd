import type { PostId, TargetAccounts, TeamId } from "@postline/domain"
import { Effect, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { CreditEstimates } from "../Credits/Estimates.js"
import { Links } from "../Links/Service.js"
import { PostsPolicy } from "../Posts/Policy.js"
import { PostsRepo } from "../Posts/Repo.js"
import { postNotFound } from "../Posts/Service.js"
import { PublishPreparation } from "./Prepare.js"

/** The price of publishing a post now, by the same checks as a publish, without holding or sending anything. */
export class PublishEstimate extends Effect.Service<PublishEstimate>()("PublishEstimate", {
  effect: Effect.gen(function*() {
    const posts = yield* PostsRepo
    const policy = yield* PostsPolicy
    const links = yield* Links
    const estimates = yield* CreditEstimates
    const preparation = yield* PublishPreparation

    /** What `postNow` would hold for these accounts, and whether the organization has it: reads only. */
    const estimate = (teamId: TeamId, postId: PostId, { socialAccountIds }: TargetAccounts) =>
      authorize(policy.canRead(teamId))((team) =>
        Effect.gen(function*() {
          const post = Option.getOrUndefined(yield* posts.find(teamId, postId))
          if (post === undefined) return yield* postNotFound(postId)
          const chosen = yield* authorize(policy.canPublish(teamId, { lock: false }))(() => preparation.accountsOf(teamId, socialAccountIds))
          const text = links.preview(post.content, post.linkTracking ?? team.linkTrackingDefault)
          const media = yield* authorize(policy.canPublish(teamId, { lock: false }))(() => posts.mediaFor(postId, { lock: false }))
          const perAccount = chosen.map(preparation.check(text, media)).map((checked) => ({
            socialAccountId: checked.account.id,
            credits: checked._tag === "Send" ? checked.credits : 0
          }))
          return yield* estimates.estimate(team.organizationId, "Publishing", perAccount)
        }))

    return { estimate } as const
  }),
  dependencies: [PostsRepo.Default, PostsPolicy.Default, Links.Default, CreditEstimates.Default, PublishPreparation.Default]
}) {}
