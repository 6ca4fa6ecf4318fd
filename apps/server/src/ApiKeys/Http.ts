import { HttpApiBuilder } from "@effect/platform"
import { ApiKey, ApiKeyList, CreatedApiKey, PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { ApiKeys } from "./Service.js"

export const ApiKeysHttpLive = HttpApiBuilder.group(PostlineApi, "apiKeys", (handlers) =>
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    return handlers
      .handle("createApiKey", ({ path, payload }) =>
        Effect.map(apiKeys.create(path.organizationId, payload), asEncoded(CreatedApiKey, { status: 201 })))
      .handle("listApiKeys", ({ path, urlParams }) =>
        Effect.map(apiKeys.list(path.organizationId, urlParams), asEncoded(ApiKeyList)))
      .handle("revokeApiKey", ({ path }) =>
        Effect.map(apiKeys.revoke(path.organizationId, path.apiKeyId), asEncoded(ApiKey)))
  })).pipe(Layer.provide(ApiKeys.Default))
