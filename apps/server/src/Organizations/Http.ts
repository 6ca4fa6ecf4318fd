import { HttpApiBuilder } from "@effect/platform"
import { Organization, OrganizationList, PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { Organizations } from "./Service.js"

export const OrganizationsHttpLive = HttpApiBuilder.group(PostlineApi, "organizations", (handlers) =>
  Effect.gen(function*() {
    const organizations = yield* Organizations
    return handlers
      .handle("listOrganizations", ({ urlParams }) => Effect.map(organizations.list(urlParams), asEncoded(OrganizationList)))
      .handle("createOrganization", ({ payload }) =>
        Effect.map(organizations.create(payload.name), asEncoded(Organization, { status: 201 })))
      .handle("getOrganization", ({ path }) => Effect.map(organizations.get(path.organizationId), asEncoded(Organization)))
      .handle("updateOrganization", ({ path, payload }) =>
        Effect.map(organizations.update(path.organizationId, payload), asEncoded(Organization)))
  })).pipe(Layer.provide(Organizations.Default))
