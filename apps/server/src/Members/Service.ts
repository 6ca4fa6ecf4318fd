import { type AddMember, Conflict, type ListQuery, type MemberRole, type OrganizationId, type UserId } from "@postline/domain"
import { Effect } from "effect"
import { isManager } from "../Access/Access.js"
import { authorize } from "../Access/Authorization.js"
import { ApiKeysRepo } from "../ApiKeys/Repo.js"
import { transactionally } from "../Database/Transaction.js"
import { Cursors } from "../Pagination/Cursor.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { MembersPolicy } from "./Policy.js"
import { MembersRepo } from "./Repo.js"

const lastManager = new Conflict({ message: "An organization keeps at least one admin or owner", reason: "last_admin_or_owner" })

/**
 * Members of an organization and their roles. An organization keeps at least
 * one admin or owner; someone who leaves or becomes a plain member loses the
 * API keys they created, since they may still hold the secrets.
 */
export class Members extends Effect.Service<Members>()("Members", {
  effect: Effect.gen(function*() {
    const repo = yield* MembersRepo
    const apiKeys = yield* ApiKeysRepo
    const cursors = yield* Cursors
    const policy = yield* MembersPolicy

    const list = (organizationId: OrganizationId, query: ListQuery) =>
      authorize(policy.canList(organizationId))(() =>
        Effect.flatMap(
          pageRequest({ resource: "members", filters: { organizationId } }, query),
          (request) => repo.list(organizationId, request)
        )).pipe(Effect.provideService(Cursors, cursors))

    const add = (organizationId: OrganizationId, { email, role }: AddMember) =>
      authorize(policy.canAdd(organizationId, role))(() => repo.add(organizationId, email, role)).pipe(transactionally)

    const leavesNoManager = (managers: ReadonlyArray<{ readonly userId: UserId }>, userId: UserId) =>
      managers.length === 1 && managers[0].userId === userId

    const changeRole = (organizationId: OrganizationId, userId: UserId, role: MemberRole) =>
      authorize(policy.canChange(organizationId, userId, role))(({ managers, member }) =>
        Effect.gen(function*() {
          if (!isManager(role) && leavesNoManager(managers, member.userId)) return yield* lastManager
          if (!isManager(role)) yield* apiKeys.revokeCreatedBy(organizationId, member.userId)
          return yield* repo.setRole(organizationId, member.userId, role)
        })).pipe(transactionally)

    /** Answers the member as they were. */
    const remove = (organizationId: OrganizationId, userId: UserId) =>
      authorize(policy.canChange(organizationId, userId))(({ managers, member }) =>
        Effect.gen(function*() {
          if (leavesNoManager(managers, member.userId)) return yield* lastManager
          yield* repo.remove(organizationId, member.userId)
          yield* apiKeys.revokeCreatedBy(organizationId, member.userId)
          return member
        })).pipe(transactionally)

    return { list, add, changeRole, remove } as const
  }),
  dependencies: [MembersRepo.Default, ApiKeysRepo.Default, MembersPolicy.Default, Cursors.Default]
}) {}
