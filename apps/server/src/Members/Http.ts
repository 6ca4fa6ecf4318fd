import { HttpApiBuilder } from "@effect/platform"
import { Member, MemberList, PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { Members } from "./Service.js"

export const MembersHttpLive = HttpApiBuilder.group(PostlineApi, "members", (handlers) =>
  Effect.gen(function*() {
    const members = yield* Members
    return handlers
      .handle("listMembers", ({ path, urlParams }) =>
        Effect.map(members.list(path.organizationId, urlParams), asEncoded(MemberList)))
      .handle("addMember", ({ path, payload }) =>
        Effect.map(members.add(path.organizationId, payload), asEncoded(Member, { status: 201 })))
      .handle("updateMember", ({ path, payload }) =>
        Effect.map(members.changeRole(path.organizationId, path.userId, payload.role), asEncoded(Member)))
      .handle("removeMember", ({ path }) =>
        Effect.map(members.remove(path.organizationId, path.userId), asEncoded(Member)))
  })).pipe(Layer.provide(Members.Default))
