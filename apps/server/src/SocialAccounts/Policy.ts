import type { TeamId } from "@postline/domain"
import { Effect } from "effect"
import { Access } from "../Access/Access.js"
import { policy } from "../Access/Authorization.js"
import type { LockOption } from "../Access/Repo.js"

/** Members see a team's accounts; admins, owners and the organization's API keys connect, change and remove them. */
export class SocialAccountsPolicy extends Effect.Service<SocialAccountsPolicy>()("SocialAccounts/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access

    const canRead = (teamId: TeamId) => policy("SocialAccount", "read")(Effect.asVoid(access.teamAccess(teamId)))

    const canManage = (teamId: TeamId, options: LockOption) =>
      policy("SocialAccount", "manage")(
        Effect.flatMap(access.teamAccess(teamId, options), ({ role }) => access.requireManager(role))
      )

    return { canRead, canManage } as const
  }),
  dependencies: [Access.Default]
}) {}
