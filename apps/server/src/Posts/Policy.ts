import type { TeamId } from "@postline/domain"
import { Effect } from "effect"
import { Access } from "../Access/Access.js"
import { policy } from "../Access/Authorization.js"
import type { LockOption } from "../Access/Repo.js"

/**
 * Posts are the team's work: every member, and the organization's API keys,
 * read, write and publish them; publishing spends the organization's credits.
 */
export class PostsPolicy extends Effect.Service<PostsPolicy>()("Posts/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access

    const canRead = (teamId: TeamId) => policy("Post", "read")(Effect.map(access.teamAccess(teamId), ({ team }) => team))

    const canWrite = (teamId: TeamId, options: LockOption) =>
      policy("Post", "write")(Effect.map(access.teamAccess(teamId, options), ({ team }) => team))

    const canPublish = (teamId: TeamId, options: LockOption) =>
      policy("Post", "publish")(Effect.map(access.teamAccess(teamId, options), ({ team }) => team))

    return { canRead, canWrite, canPublish } as const
  }),
  dependencies: [Access.Default]
}) {}
