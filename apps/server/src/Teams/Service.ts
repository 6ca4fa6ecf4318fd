import { type CreateTeam, type TeamId, type TeamListQuery, type UpdateTeam } from "@postline/domain"
import { Effect } from "effect"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { Cursors } from "../Pagination/Cursor.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { TeamsPolicy } from "./Policy.js"
import { TeamsRepo } from "./Repo.js"

/** Teams, for the current caller. */
export class Teams extends Effect.Service<Teams>()("Teams", {
  effect: Effect.gen(function*() {
    const repo = yield* TeamsRepo
    const cursors = yield* Cursors
    const policy = yield* TeamsPolicy

    const list = ({ organizationId, ...query }: TeamListQuery) =>
      authorize(policy.canList(organizationId))((scope) =>
        "organizationId" in scope
          ? Effect.flatMap(
            pageRequest({ resource: "teams", filters: { organizationId: scope.organizationId } }, query),
            (request) => repo.listOfOrganization(scope.organizationId, request)
          )
          : Effect.flatMap(pageRequest({ resource: "teams" }, query), (request) => repo.listForUser(scope.userId, request))).pipe(Effect.provideService(Cursors, cursors))

    const create = (input: CreateTeam) =>
      authorize(policy.canCreate(input.organizationId))(() => repo.create(input)).pipe(transactionally)

    const get = (teamId: TeamId) => authorize(policy.canRead(teamId))(Effect.succeed)

    const update = (teamId: TeamId, changes: UpdateTeam) =>
      authorize(policy.canManage(teamId))((team) => repo.update(team, changes)).pipe(transactionally)

    return { list, create, get, update } as const
  }),
  dependencies: [TeamsRepo.Default, TeamsPolicy.Default, Cursors.Default]
}) {}
