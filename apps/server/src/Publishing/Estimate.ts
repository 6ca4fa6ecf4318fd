import type { PostId, TargetAccounts, TeamId } from "@postline/domain"
import { Effect, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { CreditEstimates } from "../Credits/Estimates.js"
import { PostsPolicy } from "../Posts/Policy.js"
import { PostsRepo } from "../Posts/Repo.js"
import { postNotFound } from "../Posts/Service.js"
import { PublishBodies } from "./Bodies.js"
import { PublishPreparation } from "./Prepare.js"

/** The price of publishing a post now, by the same checks as a publish, without holding or sending anything. */
export class PublishEstimate extends Effect.Service<PublishEstimate>()("PublishEstimate", {
  effect: Effect.gen(function*() {
    const posts = yield* PostsRepo
    const policy = yield* PostsPolicy
    const bodies = yield* PublishBodies
    const estimates = yield* CreditEstimates
    const preparation = yield* PublishPreparation

    /** What `postNow` would hold for these accounts, and whether the organization has it: reads only. */
    const estimate = (teamId: TeamId, postId: PostId, { socialAccountIds }: TargetAccounts) =>
      authorize(policy.canRead(teamId))((team) =>
        Effect.gen(function*() {
          const post = Option.getOrUndefined(yield* posts.find(teamId, postId))
          if (post === undefined) return yield* postNotFound(postId)
          const chosen = yield* authorize(policy.canPublish(teamId, { lock: false }))(() => preparation.accountsOf(teamId, socialAccountIds))
          const tracked = post.linkTracking ?? team.linkTrackingDefault
          const accountIds = chosen.map((account) => account.id)
          const bodiesByAccount = yield* authorize(policy.canPublish(teamId, { lock: false }))(() =>
            bodies.previewOf(post, accountIds, tracked))
          const perAccount = chosen.map((account) => {
            const checked = preparation.check(bodiesByAccount.get(account.id)!)(account)
            return checked._tag === "Send"
              ? { socialAccountId: account.id, credits: checked.credits, publishes: checked.publishes, problems: [] }
              : { socialAccountId: account.id, credits: 0, publishes: 0, problems: [checked.error.message] }
          })
          return yield* estimates.estimate(team.organizationId, "Publishing", perAccount)
        }))

    return { estimate } as const
  }),
  dependencies: [PostsRepo.Default, PostsPolicy.Default, PublishBodies.Default, CreditEstimates.Default, PublishPreparation.Default]
}) {}
