import { HttpApiBuilder } from "@effect/platform"
import { ApiKey, ApiKeyList, CreatedApiKey, NotFound, PostlineApi } from "@postline/domain"
import { Effect } from "effect"
import { AccessPolicy } from "../Access/Policy.js"
import { asEncoded } from "../Http/Encoded.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { ApiKeysRepo } from "./Repo.js"

export const ApiKeysHttpLive = HttpApiBuilder.group(PostlineApi, "apiKeys", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* ApiKeysRepo
    const policy = yield* AccessPolicy

    return handlers
      .handle("createApiKey", ({ path: { organizationId }, payload }) =>
        Effect.gen(function*() {
          const user = yield* policy.manageApiKeys(organizationId)
          return asEncoded(CreatedApiKey, { status: 201 })(yield* repo.create(organizationId, user.id, payload))
        }))
      .handle("listApiKeys", ({ path: { organizationId }, urlParams }) =>
        Effect.gen(function*() {
          const user = yield* policy.manageApiKeys(organizationId)
          const request = yield* pageRequest(`api keys of organization ${organizationId.toLowerCase()} for user ${user.id}`, urlParams)
          return asEncoded(ApiKeyList)(yield* repo.list(organizationId, request))
        }))
      .handle("revokeApiKey", ({ path: { apiKeyId, organizationId } }) =>
        Effect.gen(function*() {
          yield* policy.manageApiKeys(organizationId)
          const revoked = yield* repo.revoke(organizationId, apiKeyId)
          if (revoked._tag === "None") return yield* new NotFound({ message: `API key ${apiKeyId} not found` })
          return asEncoded(ApiKey)(revoked.value)
        }))
  }))
