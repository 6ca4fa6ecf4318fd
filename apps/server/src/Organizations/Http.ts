import { HttpApiBuilder } from "@effect/platform"
import { CurrentUser, Organization, OrganizationList, PostlineApi } from "@postline/domain"
import { Effect } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { OrganizationPolicy } from "./Policy.js"
import { OrganizationsRepo } from "./Repo.js"

export const OrganizationsHttpLive = HttpApiBuilder.group(PostlineApi, "organizations", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* OrganizationsRepo
    const policy = yield* OrganizationPolicy
    return handlers
      .handle("listOrganizations", ({ urlParams }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const request = yield* pageRequest(`organizations of user ${user.id}`, urlParams)
          return asEncoded(OrganizationList)(yield* repo.listForUser(user.id, request))
        }))
      .handle("createOrganization", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => repo.createForUser(user.id, payload.name)).pipe(
          Effect.map(asEncoded(Organization, { status: 201 }))
        ))
      .handle("getOrganization", ({ path }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const organization = yield* repo.findForUser(user.id, path.organizationId)
          if (organization._tag === "None") return yield* policy.notFound(path.organizationId)
          return asEncoded(Organization)(organization.value)
        }))
      .handle("updateOrganization", ({ path, payload }) =>
        policy.requireManager(path.organizationId).pipe(
          Effect.zipRight(repo.update(path.organizationId, payload)),
          Effect.map(asEncoded(Organization))
        ))
  }))
