import { CurrentUser, Forbidden, NotFound, type OrganizationId } from "@postline/domain"
import { Effect } from "effect"
import { OrganizationsRepo, type Role } from "./Repo.js"

const managers: ReadonlySet<Role> = new Set(["owner", "admin"])

/** Passes for an admin or owner; 403 for other roles. */
const requireManagerRole = (role: Role) =>
  managers.has(role) ? Effect.void : new Forbidden({ message: "Only an admin or owner of the organization may do this" })

const notFound = (organizationId: OrganizationId) => new NotFound({ message: `Organization ${organizationId} not found` })

/**
 * Who may see and change an organization and its teams. Non-members learn
 * nothing, not even that the organization exists; members who do not manage
 * it may look but not change.
 */
export class OrganizationPolicy extends Effect.Service<OrganizationPolicy>()("OrganizationPolicy", {
  effect: Effect.gen(function*() {
    const repo = yield* OrganizationsRepo

    /** The caller's role in the organization; 404 for a non-member. */
    const requireMember = (organizationId: OrganizationId) =>
      Effect.gen(function*() {
        const user = yield* CurrentUser
        const role = yield* repo.roleOf(user.id, organizationId)
        if (role._tag === "None") return yield* notFound(organizationId)
        return role.value
      })

    /** Passes for an admin or owner; 403 for other members, 404 for non-members. */
    const requireManager = (organizationId: OrganizationId) => Effect.flatMap(requireMember(organizationId), requireManagerRole)

    return { requireMember, requireManager, requireManagerRole, notFound } as const
  }),
  dependencies: [OrganizationsRepo.Default]
}) {}
