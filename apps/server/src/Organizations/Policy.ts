import { Caller, CurrentCaller, type OrganizationId } from "@postline/domain"
import { Effect, Option } from "effect"
import { Access, organizationNotFound } from "../Access/Access.js"
import { policy } from "../Access/Authorization.js"
import { OrganizationsRepo } from "./Repo.js"

/** Who may see, create and change organizations. */
export class OrganizationsPolicy extends Effect.Service<OrganizationsPolicy>()("Organizations/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access
    const repo = yield* OrganizationsRepo

    /** Anyone lists what they can see: a user their organizations, an API key its own. */
    const canList = policy("Organization", "list")(CurrentCaller)

    /** Creating an organization takes a person. */
    const canCreate = policy("Organization", "create")(access.person("create organizations"))

    /** The organization itself, for whoever may see it: for a member, one statement is both check and read. */
    const canRead = (organizationId: OrganizationId) =>
      policy("Organization", "read")(Effect.gen(function*() {
        const caller = yield* CurrentCaller
        const found = Caller.$is("User")(caller)
          ? yield* repo.findForMember(caller.user.id, organizationId)
          : yield* Effect.zipRight(access.roleIn(organizationId), repo.find(organizationId))
        if (Option.isNone(found)) return yield* organizationNotFound(organizationId)
        return found.value
      }))

    /** Admins and owners change an organization (403 for other members). */
    const canManage = (organizationId: OrganizationId) =>
      policy("Organization", "manage")(
        Effect.flatMap(access.roleIn(organizationId, { lock: true }), access.requireManager)
      )

    return { canList, canCreate, canRead, canManage } as const
  }),
  dependencies: [Access.Default, OrganizationsRepo.Default]
}) {}
