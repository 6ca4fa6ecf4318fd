import type { TeamId } from "@postline/domain"
import { Effect } from "effect"
import { Access } from "../Access/Access.js"
import { policy } from "../Access/Authorization.js"
import type { LockOption } from "../Access/Repo.js"

/** Assets are the team's, like its posts: every member, and the organization's API keys, manage them. */
export class AssetsPolicy extends Effect.Service<AssetsPolicy>()("Assets/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access

    const canRead = (teamId: TeamId) => policy("Asset", "read")(Effect.map(access.teamAccess(teamId), ({ team }) => team))

    const canWrite = (teamId: TeamId, options: LockOption) =>
      policy("Asset", "write")(Effect.map(access.teamAccess(teamId, options), ({ team }) => team))

    return { canRead, canWrite } as const
  }),
  dependencies: [Access.Default]
}) {}
