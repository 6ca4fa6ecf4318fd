import type { TeamId } from "@postline/domain"
import { Effect } from "effect"
import { Access } from "../Access/Access.js"
import { policy } from "../Access/Authorization.js"
import type { LockOption } from "../Access/Repo.js"

/**
 * Analytics are the team's: every member, and the organization's API keys, read them and refresh them; a
 * refresh spends the organization's credits, as publishing does.
 */
export class AnalyticsPolicy extends Effect.Service<AnalyticsPolicy>()("Analytics/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access

    const canRead = (teamId: TeamId) => policy("Analytics", "read")(Effect.map(access.teamAccess(teamId), ({ team }) => team))

    const canRefresh = (teamId: TeamId, options: LockOption) =>
      policy("Analytics", "refresh")(Effect.map(access.teamAccess(teamId, options), ({ team }) => team))

    return { canRead, canRefresh } as const
  }),
  dependencies: [Access.Default]
}) {}
