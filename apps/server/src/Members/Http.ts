import { HttpApiBuilder } from "@effect/platform"
import { Member, MemberList, NotFound, type OrganizationId, PostlineApi, type UserId } from "@postline/domain"
import { Effect } from "effect"
import { AccessPolicy } from "../Access/Policy.js"
import { asEncoded } from "../Http/Encoded.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { MembersRepo } from "./Repo.js"

export const MembersHttpLive = HttpApiBuilder.group(PostlineApi, "members", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* MembersRepo
    const policy = yield* AccessPolicy

    const findMember = (organizationId: OrganizationId, userId: UserId) =>
      Effect.flatMap(repo.find(organizationId, userId), (member) =>
        member._tag === "Some"
          ? Effect.succeed(member.value)
          : new NotFound({ message: `User ${userId} is not a member of organization ${organizationId}` }))

    return handlers
      .handle("listMembers", ({ path: { organizationId }, urlParams }) =>
        Effect.gen(function*() {
          const { user } = yield* policy.viewMembers(organizationId)
          const request = yield* pageRequest(`members of organization ${organizationId.toLowerCase()} for user ${user.id}`, urlParams)
          return asEncoded(MemberList)(yield* repo.list(organizationId, request))
        }))
      .handle("addMember", ({ path: { organizationId }, payload }) =>
        Effect.gen(function*() {
          yield* policy.addMember(organizationId, payload.role)
          return asEncoded(Member, { status: 201 })(yield* repo.add(organizationId, payload.email, payload.role))
        }))
      .handle("updateMember", ({ path: { organizationId, userId }, payload }) =>
        Effect.gen(function*() {
          const caller = yield* policy.viewMembers(organizationId)
          const member = yield* findMember(organizationId, userId)
          yield* policy.changeRole(caller, member, payload.role)
          return asEncoded(Member)(yield* repo.setRole(organizationId, member.userId, payload.role))
        }))
      .handle("removeMember", ({ path: { organizationId, userId } }) =>
        Effect.gen(function*() {
          const caller = yield* policy.viewMembers(organizationId)
          const member = yield* findMember(organizationId, userId)
          yield* policy.removeMember(caller, member)
          return asEncoded(Member)(yield* repo.remove(organizationId, member))
        }))
  }))
