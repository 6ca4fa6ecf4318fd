import { HttpApiBuilder } from "@effect/platform"
import { CurrentUser, Forbidden, Member, MemberList, NotFound, type OrganizationId, PostlineApi, type UserId } from "@postline/domain"
import { Effect } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { OrganizationPolicy } from "../Organizations/Policy.js"
import type { Role } from "../Organizations/Repo.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { MembersRepo } from "./Repo.js"

/** Only an owner may grant, change or take away the owner role. */
const requireOwnerFor = (callerRole: Role, ...roles: ReadonlyArray<Role>) =>
  roles.includes("owner") && callerRole !== "owner"
    ? new Forbidden({ message: "Only an owner may grant, change or take away the owner role" })
    : Effect.void

export const MembersHttpLive = HttpApiBuilder.group(PostlineApi, "members", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* MembersRepo
    const policy = yield* OrganizationPolicy

    const findMember = (organizationId: OrganizationId, userId: UserId) =>
      Effect.flatMap(repo.find(organizationId, userId), (member) =>
        member._tag === "Some"
          ? Effect.succeed(member.value)
          : new NotFound({ message: `User ${userId} is not a member of organization ${organizationId}` }))

    return handlers
      .handle("listMembers", ({ path: { organizationId }, urlParams }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          yield* policy.requireMember(organizationId)
          const request = yield* pageRequest(`members of organization ${organizationId.toLowerCase()} for user ${user.id}`, urlParams)
          return asEncoded(MemberList)(yield* repo.list(organizationId, request))
        }))
      .handle("addMember", ({ path: { organizationId }, payload }) =>
        Effect.gen(function*() {
          const callerRole = yield* policy.requireMember(organizationId)
          yield* policy.requireManagerRole(callerRole)
          yield* requireOwnerFor(callerRole, payload.role)
          return asEncoded(Member, { status: 201 })(yield* repo.add(organizationId, payload.email, payload.role))
        }))
      .handle("updateMember", ({ path: { organizationId, userId }, payload }) =>
        Effect.gen(function*() {
          const callerRole = yield* policy.requireMember(organizationId)
          const member = yield* findMember(organizationId, userId)
          yield* policy.requireManagerRole(callerRole)
          yield* requireOwnerFor(callerRole, member.role, payload.role)
          return asEncoded(Member)(yield* repo.setRole(organizationId, member.userId, payload.role))
        }))
      .handle("removeMember", ({ path: { organizationId, userId } }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const callerRole = yield* policy.requireMember(organizationId)
          const member = yield* findMember(organizationId, userId)
          // Anyone may leave; removing someone else takes an admin or owner.
          if (member.userId !== user.id) {
            yield* policy.requireManagerRole(callerRole)
            yield* requireOwnerFor(callerRole, member.role)
          }
          return asEncoded(Member)(yield* repo.remove(organizationId, member))
        }))
  }))
