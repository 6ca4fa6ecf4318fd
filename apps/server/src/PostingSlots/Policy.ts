import type { TeamId } from "@postline/domain"
import { Effect } from "effect"
import { Access } from "../Access/Access.js"
import { policy } from "../Access/Authorization.js"
import type { LockOption } from "../Access/Repo.js"

/** Members see a team's posting slots; admins, owners and the organization's API keys replace them. */
export class PostingSlotsPolicy extends Effect.Service<PostingSlotsPolicy>()("PostingSlots/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access

    const canRead = (teamId: TeamId) => policy("PostingSlots", "read")(Effect.asVoid(access.teamAccess(teamId)))

    const canManage = (teamId: TeamId, options: LockOption) =>
      policy("PostingSlots", "manage")(
        Effect.flatMap(access.teamAccess(teamId, options), ({ role }) => access.requireManager(role))
      )

    return { canRead, canManage } as const
  }),
  dependencies: [Access.Default]
}) {}
