import { type Member, type MemberRole, NotFound, type OrganizationId, type UserId } from "@postline/domain"
import { Effect } from "effect"
import { Access, isManager, organizationNotFound } from "../Access/Access.js"
import { policy } from "../Access/Authorization.js"
import { MembersRepo } from "./Repo.js"

const action = "see or manage members"

/** Any member, in person, sees the members; admins and owners change them; only an owner touches the owner role. */
export class MembersPolicy extends Effect.Service<MembersPolicy>()("Members/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access
    const repo = yield* MembersRepo

    const canList = (organizationId: OrganizationId) =>
      policy("Member", "list")(Effect.zipRight(access.personIn(organizationId, action), access.roleIn(organizationId)))

    const canAdd = (organizationId: OrganizationId, role: MemberRole) =>
      policy("Member", "add")(Effect.gen(function*() {
        yield* access.personIn(organizationId, action)
        const callerRole = yield* access.roleIn(organizationId, { lock: true })
        yield* access.requireManager(callerRole)
        yield* access.requireOwnerFor(callerRole, role)
      }))

    /**
     * A change of the member's role (`role`), or their removal (no role). Anyone may leave; changing or
     * removing someone else takes an admin or owner, and an owner where the owner role is involved. Answers
     * the member as they are and the organization's admins and owners, locked until the transaction ends.
     */
    const canChange = (organizationId: OrganizationId, userId: UserId, role?: MemberRole) =>
      policy("Member", "change")(Effect.gen(function*() {
        const actor = yield* access.personIn(organizationId, action)
        // Outsiders are refused before anything of the organization is locked.
        yield* access.roleIn(organizationId)
        const locked = yield* repo.lockManagersAnd(organizationId, [actor.id, userId])
        // A caller removed meanwhile finds the organization gone.
        const caller = locked.find((member) => member.userId === actor.id)
        if (caller === undefined) return yield* organizationNotFound(organizationId)
        const member = locked.find((found) => found.userId === userId)
        if (member === undefined) {
          return yield* new NotFound({ message: `User ${userId} is not a member of organization ${organizationId}` })
        }
        const leaving = role === undefined && member.userId === actor.id
        if (!leaving) {
          yield* access.requireManager(caller.role)
          yield* access.requireOwnerFor(caller.role, member.role, ...(role === undefined ? [] : [role]))
        }
        return { member, managers: locked.filter((found): found is Member => isManager(found.role)) }
      }))

    return { canList, canAdd, canChange } as const
  }),
  dependencies: [Access.Default, MembersRepo.Default]
}) {}
