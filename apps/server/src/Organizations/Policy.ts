import { CurrentUser, Forbidden, NotFound, type OrganizationId } from "@postline/domain"
import { Effect } from "effect"
import { OrganizationsRepo, type Role } from "./Repo.js"

const managers: ReadonlySet<Role> = new Set(["owner", "admin"])

/**
 * Who may see and change an organization and its teams. Non-members learn
 * nothing, not even that the organization exists; members who do not manage
 * it may look but not change.
 */
export class OrganizationPolicy extends Effect.Service<OrganizationPolicy>()("OrganizationPolicy", {
  effect: Effect.gen(function*() {
    const repo = yield* OrganizationsRepo

    const requireMember = (organizationId: OrganizationId) =>
      Effect.gen(function*() {
        const user = yield* CurrentUser
        const found = yield* repo.findForUser(user.id, organizationId)
        if (found._tag === "None") {
          return yield* new NotFound({ message: `Organization ${organizationId} not found` })
        }
        return found.value
      })

    const requireManager = (organizationId: OrganizationId) =>
      Effect.tap(requireMember(organizationId), ({ role }) =>
        managers.has(role)
          ? Effect.void
          : new Forbidden({ message: "Only an admin or owner of the organization may do this" }))

    return { requireMember, requireManager } as const
  }),
  dependencies: [OrganizationsRepo.Default]
}) {}
