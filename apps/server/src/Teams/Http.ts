import { HttpApiBuilder } from "@effect/platform"
import { Caller, CurrentCaller, type ListQuery, type OrganizationId, PostlineApi, Team, TeamList } from "@postline/domain"
import { Effect } from "effect"
import { AccessPolicy, callerLabel } from "../Access/Policy.js"
import { asEncoded } from "../Http/Encoded.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { TeamsRepo } from "./Repo.js"

export const TeamsHttpLive = HttpApiBuilder.group(PostlineApi, "teams", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* TeamsRepo
    const policy = yield* AccessPolicy

    const listOfOrganization = (organizationId: OrganizationId, query: ListQuery) =>
      Effect.gen(function*() {
        const caller = yield* CurrentCaller
        yield* policy.viewOrganization(organizationId)
        const scope = `teams of organization ${organizationId.toLowerCase()} for ${callerLabel(caller)}`
        return yield* repo.listOfOrganization(organizationId, yield* pageRequest(scope, query))
      })

    return handlers
      .handle("listTeams", ({ urlParams: { organizationId, ...query } }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentCaller
          const page = organizationId !== undefined
            ? yield* listOfOrganization(organizationId, query)
            : yield* Caller.$match(caller, {
              User: ({ user }) =>
                Effect.flatMap(pageRequest(`teams of ${callerLabel(caller)}`, query), (request) =>
                  repo.listForUser(user.id, request)),
              // An API key's teams are those of its organization.
              ApiKey: (key) => listOfOrganization(key.organizationId, query)
            })
          return asEncoded(TeamList)(page)
        }))
      .handle("createTeam", ({ payload }) =>
        policy.manageOrganization(payload.organizationId).pipe(
          Effect.zipRight(repo.create(payload)),
          Effect.map(asEncoded(Team, { status: 201 }))
        ))
      .handle("getTeam", ({ path }) => Effect.map(policy.viewTeam(path.teamId), ({ team }) => asEncoded(Team)(team)))
      .handle("updateTeam", ({ path, payload }) =>
        Effect.flatMap(policy.manageTeam(path.teamId), ({ team }) => repo.update(team, payload)).pipe(
          Effect.map(asEncoded(Team))
        ))
  }))
