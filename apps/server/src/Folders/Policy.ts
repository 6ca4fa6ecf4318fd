import type { TeamId } from "@postline/domain"
import { Effect } from "effect"
import { Access } from "../Access/Access.js"
import { policy } from "../Access/Authorization.js"
import type { LockOption } from "../Access/Repo.js"

/** The media library is the team's, like its posts: every member, and the organization's API keys, manage it. */
export class FoldersPolicy extends Effect.Service<FoldersPolicy>()("Folders/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access

    const canRead = (teamId: TeamId) => policy("Folder", "read")(Effect.map(access.teamAccess(teamId), ({ team }) => team))

    const canWrite = (teamId: TeamId, options: LockOption) =>
      policy("Folder", "write")(Effect.map(access.teamAccess(teamId, options), ({ team }) => team))

    return { canRead, canWrite } as const
  }),
  dependencies: [Access.Default]
}) {}
