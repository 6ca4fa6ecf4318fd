import { Caller, type ListQuery, type OrganizationId, type UpdateOrganization } from "@postline/domain"
import { Effect } from "effect"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { Cursors } from "../Pagination/Cursor.js"
import { OrganizationsPolicy } from "./Policy.js"
import { OrganizationsRepo } from "./Repo.js"

/** Organizations, for the current caller. */
export class Organizations extends Effect.Service<Organizations>()("Organizations", {
  effect: Effect.gen(function*() {
    const repo = yield* OrganizationsRepo
    const cursors = yield* Cursors
    const policy = yield* OrganizationsPolicy

    const list = (query: ListQuery) =>
      authorize(policy.canList)((caller) =>
        Effect.flatMap(pageRequest({ resource: "organizations" }, query), (request) =>
          Caller.$match(caller, {
            User: ({ user }) => repo.listForUser(user.id, request),
            ApiKey: ({ organizationId }) => repo.listOne(organizationId, request)
          }))).pipe(Effect.provideService(Cursors, cursors))

    /** The caller becomes the new organization's admin. */
    const create = (name: string) => authorize(policy.canCreate)((user) => repo.createForUser(user.id, name))

    const get = (organizationId: OrganizationId) => authorize(policy.canRead(organizationId))(Effect.succeed)

    const update = (organizationId: OrganizationId, changes: UpdateOrganization) =>
      authorize(policy.canManage(organizationId))(() => repo.update(organizationId, changes)).pipe(transactionally)

    return { list, create, get, update } as const
  }),
  dependencies: [OrganizationsRepo.Default, OrganizationsPolicy.Default, Cursors.Default]
}) {}
