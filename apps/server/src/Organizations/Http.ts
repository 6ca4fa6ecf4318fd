import { HttpApiBuilder } from "@effect/platform"
import { CurrentUser, PostlineApi } from "@postline/domain"
import { Effect } from "effect"
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
          return yield* repo.listForUser(user.id, yield* pageRequest(`organizations of user ${user.id}`, urlParams))
        }))
      .handle("createOrganization", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => repo.createForUser(user.id, payload.name)))
      .handle("getOrganization", ({ path }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const organization = yield* repo.findForUser(user.id, path.organizationId)
          if (organization._tag === "None") return yield* policy.notFound(path.organizationId)
          return organization.value
        }))
      .handle("updateOrganization", ({ path, payload }) =>
        Effect.zipRight(policy.requireManager(path.organizationId), repo.update(path.organizationId, payload)))
  }))
