import { HttpApiBuilder } from "@effect/platform"
import { CurrentUser, NotFound, PostlineApi, type TeamId } from "@postline/domain"
import { Effect } from "effect"
import { OrganizationPolicy } from "../Organizations/Policy.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { TeamsRepo } from "./Repo.js"

export const TeamsHttpLive = HttpApiBuilder.group(PostlineApi, "teams", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* TeamsRepo
    const policy = yield* OrganizationPolicy

    const notFound = (teamId: TeamId) => new NotFound({ message: `Team ${teamId} not found` })

    /** The team, if the caller may see it; a team of a foreign organization is as absent as a missing one. */
    const findVisible = (teamId: TeamId, check: "requireMember" | "requireManager") =>
      Effect.gen(function*() {
        const team = yield* repo.findById(teamId)
        if (team._tag === "None") return yield* notFound(teamId)
        yield* policy[check](team.value.organizationId).pipe(
          Effect.catchTag("NotFound", () => notFound(teamId))
        )
        return team.value
      })

    return handlers
      .handle("listTeams", ({ urlParams: { organizationId, ...query } }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          if (organizationId === undefined) {
            return yield* repo.listForUser(user.id, yield* pageRequest(`teams of user ${user.id}`, query))
          }
          yield* policy.requireMember(organizationId)
          const request = yield* pageRequest(`teams of organization ${organizationId.toLowerCase()} for user ${user.id}`, query)
          return yield* repo.listOfOrganization(organizationId, request)
        }))
      .handle("createTeam", ({ payload }) =>
        Effect.zipRight(policy.requireManager(payload.organizationId), repo.create(payload)))
      .handle("getTeam", ({ path }) => findVisible(path.teamId, "requireMember"))
      .handle("updateTeam", ({ path, payload }) =>
        Effect.zipRight(findVisible(path.teamId, "requireManager"), repo.update(path.teamId, payload)))
  }))
