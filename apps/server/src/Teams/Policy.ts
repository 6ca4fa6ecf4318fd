import { Caller, CurrentCaller, type OrganizationId, type TeamId, type UserId } from "@postline/domain"
import { Effect } from "effect"
import { Access } from "../Access/Access.js"
import { policy } from "../Access/Authorization.js"

export type TeamListScope = { readonly organizationId: OrganizationId } | { readonly userId: UserId }

/** Who may see, create and change teams: as their organization decides. */
export class TeamsPolicy extends Effect.Service<TeamsPolicy>()("Teams/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access

    /**
     * Which teams the caller lists: those of one organization, if it can see it; without one, those of every
     * organization a user belongs to, and an API key's own organization's.
     */
    const canList = (organizationId: OrganizationId | undefined) =>
      policy("Team", "list")(Effect.gen(function*() {
        const caller = yield* CurrentCaller
        if (organizationId !== undefined) {
          yield* access.roleIn(organizationId)
          return { organizationId } satisfies TeamListScope
        }
        return Caller.$match(caller, {
          User: ({ user }): TeamListScope => ({ userId: user.id }),
          ApiKey: (key): TeamListScope => ({ organizationId: key.organizationId })
        })
      }))

    /** Admins and owners of the organization create its teams. */
    const canCreate = (organizationId: OrganizationId) =>
      policy("Team", "create")(Effect.flatMap(access.roleIn(organizationId, { lock: true }), access.requireManager))

    /** The team, for anyone who may see it. */
    const canRead = (teamId: TeamId) => policy("Team", "read")(Effect.map(access.teamAccess(teamId), ({ team }) => team))

    /** The team, for admins and owners of its organization. */
    const canManage = (teamId: TeamId) =>
      policy("Team", "manage")(
        Effect.tap(access.teamAccess(teamId, { lock: true }), ({ role }) => access.requireManager(role)).pipe(
          Effect.map(({ team }) => team)
        )
      )

    return { canList, canCreate, canRead, canManage } as const
  }),
  dependencies: [Access.Default]
}) {}
