import { HttpApiBuilder } from "@effect/platform"
import { CurrentUser, NotFound, PostlineApi, Team, type TeamId, TeamList } from "@postline/domain"
import { asEncoded } from "../Http/Encoded.js"
import { Effect } from "effect"
import { OrganizationPolicy } from "../Organizations/Policy.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { TeamsRepo } from "./Repo.js"

export const TeamsHttpLive = HttpApiBuilder.group(PostlineApi, "teams", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* TeamsRepo
    const policy = yield* OrganizationPolicy

    /** The team and the caller's role in its organization; a team of a foreign organization is as absent as a missing one. */
    const findVisible = (teamId: TeamId) =>
      Effect.gen(function*() {
        const user = yield* CurrentUser
        const found = yield* repo.findWithRole(teamId, user.id)
        if (found._tag === "None" || found.value.role === null) {
          return yield* new NotFound({ message: `Team ${teamId} not found` })
        }
        return { team: found.value.team, role: found.value.role }
      })

    return handlers
      .handle("listTeams", ({ urlParams: { organizationId, ...query } }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          if (organizationId === undefined) {
            const request = yield* pageRequest(`teams of user ${user.id}`, query)
            return asEncoded(TeamList)(yield* repo.listForUser(user.id, request))
          }
          yield* policy.requireMember(organizationId)
          const request = yield* pageRequest(`teams of organization ${organizationId.toLowerCase()} for user ${user.id}`, query)
          return asEncoded(TeamList)(yield* repo.listOfOrganization(organizationId, request))
        }))
      .handle("createTeam", ({ payload }) =>
        policy.requireManager(payload.organizationId).pipe(
          Effect.zipRight(repo.create(payload)),
          Effect.map(asEncoded(Team, { status: 201 }))
        ))
      .handle("getTeam", ({ path }) => Effect.map(findVisible(path.teamId), ({ team }) => asEncoded(Team)(team)))
      .handle("updateTeam", ({ path, payload }) =>
        Effect.gen(function*() {
          const { role, team } = yield* findVisible(path.teamId)
          yield* policy.requireManagerRole(role)
          return asEncoded(Team)(yield* repo.update(team, payload))
        }))
  }))
