import { HttpApiBuilder } from "@effect/platform"
import {
  AgentContext,
  AgentDefaultsChoice,
  BadRequest,
  Caller,
  CurrentCaller,
  PostlineApi,
  type SetAgentDefaults
} from "@postline/domain"
import { Effect } from "effect"
import { AccessPolicy } from "../Access/Policy.js"
import { asEncoded } from "../Http/Encoded.js"
import { AgentContextRepo } from "./Repo.js"

export const AgentContextHttpLive = HttpApiBuilder.group(PostlineApi, "agent", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* AgentContextRepo
    const policy = yield* AccessPolicy

    /** Both must be visible (404 as if absent otherwise), and the team must be the organization's (400). */
    const checkChoice = ({ organizationId, teamId }: SetAgentDefaults) =>
      teamId === null
        ? Effect.asVoid(policy.viewOrganization(organizationId))
        : Effect.gen(function*() {
          const { team } = yield* policy.viewTeam(teamId)
          // A visible team's organization is visible: only another organization needs a check of its own.
          if (team.organizationId === organizationId.toLowerCase()) return
          yield* policy.viewOrganization(organizationId)
          return yield* new BadRequest({ message: `Team ${teamId} is not a team of organization ${organizationId}` })
        })

    return handlers
      .handle("getContext", () =>
        Effect.gen(function*() {
          const caller = yield* CurrentCaller
          const context = yield* repo.read(caller)
          return asEncoded(AgentContext)({ user: Caller.$is("User")(caller) ? caller.user : null, ...context })
        }))
      .handle("setDefaults", ({ payload }) =>
        Effect.gen(function*() {
          yield* checkChoice(payload)
          return asEncoded(AgentDefaultsChoice)(yield* repo.save(yield* CurrentCaller, payload))
        }))
  }))
