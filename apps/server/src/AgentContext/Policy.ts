import { BadRequest, CurrentCaller, type SetAgentDefaults } from "@postline/domain"
import { Effect } from "effect"
import { Access } from "../Access/Access.js"
import { policy } from "../Access/Authorization.js"

/** Every caller reads its own context; defaults must be an organization it sees and one of its teams, or none. */
export class AgentContextPolicy extends Effect.Service<AgentContextPolicy>()("AgentContext/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access

    const canRead = policy("AgentContext", "read")(CurrentCaller)

    /** Both must be visible (404 as if absent otherwise), and the team must be the organization's (400). */
    const canChoose = ({ organizationId, teamId }: SetAgentDefaults) =>
      policy("AgentContext", "choose")(
        teamId === null
          ? Effect.asVoid(access.roleIn(organizationId, { lock: true }))
          : Effect.gen(function*() {
            const { team } = yield* access.teamAccess(teamId, { lock: true })
            // A visible team's organization is visible: only another organization needs a check of its own.
            if (team.organizationId === organizationId) return
            yield* access.roleIn(organizationId)
            return yield* new BadRequest({
              message: `Team ${teamId} is not a team of organization ${organizationId}`,
              reason: "team_not_in_organization"
            })
          })
      )

    return { canRead, canChoose } as const
  }),
  dependencies: [Access.Default]
}) {}
