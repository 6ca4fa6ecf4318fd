import { HttpApiBuilder } from "@effect/platform"
import { Caller, CurrentCaller, Organization, OrganizationList, PostlineApi } from "@postline/domain"
import { Effect } from "effect"
import { AccessPolicy, callerLabel } from "../Access/Policy.js"
import { asEncoded } from "../Http/Encoded.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { OrganizationsRepo } from "./Repo.js"

export const OrganizationsHttpLive = HttpApiBuilder.group(PostlineApi, "organizations", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* OrganizationsRepo
    const policy = yield* AccessPolicy
    return handlers
      .handle("listOrganizations", ({ urlParams }) =>
        Effect.gen(function*() {
          const caller = yield* CurrentCaller
          const request = yield* pageRequest(`organizations of ${callerLabel(caller)}`, urlParams)
          const page = yield* Caller.$match(caller, {
            User: ({ user }) => repo.listForUser(user.id, request),
            ApiKey: ({ organizationId }) => repo.listOne(organizationId, request)
          })
          return asEncoded(OrganizationList)(page)
        }))
      .handle("createOrganization", ({ payload }) =>
        Effect.flatMap(policy.createOrganization, (user) => repo.createForUser(user.id, payload.name)).pipe(
          Effect.map(asEncoded(Organization, { status: 201 }))
        ))
      .handle("getOrganization", ({ path }) =>
        Effect.map(policy.readOrganization(path.organizationId), asEncoded(Organization)))
      .handle("updateOrganization", ({ path, payload }) =>
        policy.manageOrganization(path.organizationId).pipe(
          Effect.zipRight(repo.update(path.organizationId, payload)),
          Effect.map(asEncoded(Organization))
        ))
  }))
