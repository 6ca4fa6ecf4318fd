import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { invalidUnless, Name, oneOf, optional, strict, Timestamp } from "./Fields.js"
import { instantArbitrary, instantWithOffsetPattern, isInstantWithOffset } from "./Instants.js"
import { ListEnvelope, listQueryFieldsSortedBy } from "./Lists.js"
import { ApiKeyId, OrganizationId, UserId } from "./Ids.js"
import { OrganizationPath } from "./Organizations.js"

export const ApiKey = Schema.Struct({
  id: ApiKeyId,
  organizationId: OrganizationId,
  name: Schema.String,
  prefix: Schema.String.annotations({ description: "The key's first characters, to recognise it by; not a secret" }),
  createdByUserId: UserId,
  createdAt: Timestamp,
  expiresAt: Schema.NullOr(Timestamp),
  lastUsedAt: Schema.NullOr(Timestamp.annotations({ description: "Kept to within a minute" })),
  revokedAt: Schema.NullOr(Timestamp)
}).annotations({ identifier: "ApiKey" })
export type ApiKey = typeof ApiKey.Type

/** The answer to creating a key: the only time its secret is shown. */
export const CreatedApiKey = Schema.Struct({
  ...ApiKey.fields,
  key: Schema.String.annotations({ description: "The secret bearer value (`plk_…`); shown this once, stored only as a hash" })
}).annotations({ identifier: "CreatedApiKey" })

const FutureTimestamp = Schema.String.pipe(
  Schema.filter((s) => isInstantWithOffset(s) && Date.parse(s) > Date.now() && Date.parse(s) < Date.UTC(9999, 0, 1), {
    jsonSchema: { pattern: instantWithOffsetPattern }
  })
).annotations({
  identifier: "FutureTimestamp",
  arbitrary: () => instantArbitrary(new Date(Date.now() + 3_600_000), new Date(Date.UTC(9998, 0, 1))),
  description: "An ISO 8601 timestamp with a time zone offset (e.g. `2027-01-31T12:00:00Z` or `2027-06-30T00:00:00+02:00`). " +
    "It must also be in the future and before year 9999 (UTC), which the pattern cannot say",
  ...invalidUnless("must be an ISO 8601 timestamp with an offset, in the future, before year 9999")
})

export const CreateApiKey = Schema.Struct({
  name: Name,
  expiresAt: optional(Schema.NullOr(FutureTimestamp))
}).annotations({ ...strict, identifier: "CreateApiKey" })
export type CreateApiKey = typeof CreateApiKey.Type

/** API keys have no updatedAt to sort by. */
export const ApiKeySortField = oneOf("createdAt", "name").annotations({
  identifier: "ApiKeySortField",
  description: "Field to sort by; default createdAt"
})

export const ApiKeyListQuery = Schema.Struct(listQueryFieldsSortedBy(ApiKeySortField)).annotations(strict)
export type ApiKeyListQuery = typeof ApiKeyListQuery.Type

export const ApiKeyList = ListEnvelope(ApiKey, "ApiKeyList")

export class ApiKeysGroup extends HttpApiGroup.make("apiKeys")
  .add(
    HttpApiEndpoint.post("createApiKey", "/v1/organizations/:organizationId/api-keys")
      .setPath(OrganizationPath)
      .setPayload(CreateApiKey)
      .addSuccess(CreatedApiKey, { status: 201 })
      .annotate(OpenApi.Summary, "Create API key")
      .annotate(
        OpenApi.Description,
        "Creates a key that acts as an admin of this organization alone. The answer holds the secret `key`, shown " +
          "this once. Admins and owners may; an API key may not."
      )
  )
  .add(
    HttpApiEndpoint.get("listApiKeys", "/v1/organizations/:organizationId/api-keys")
      .setPath(OrganizationPath)
      .setUrlParams(ApiKeyListQuery)
      .addSuccess(ApiKeyList)
      .annotate(OpenApi.Summary, "List API keys")
      .annotate(OpenApi.Description, "The organization's keys, revoked ones included, never their secrets. Admins and owners may.")
  )
  .add(
    HttpApiEndpoint.del("revokeApiKey", "/v1/organizations/:organizationId/api-keys/:apiKeyId")
      .setPath(Schema.Struct({ organizationId: OrganizationId, apiKeyId: ApiKeyId }))
      .addSuccess(ApiKey)
      .annotate(OpenApi.Summary, "Revoke API key")
      .annotate(
        OpenApi.Description,
        "Revokes the key: from this moment it gets 401. Answers the key with revokedAt set; revoking it again changes nothing."
      )
  )
  .annotate(OpenApi.Title, "apiKeys")
  .annotate(OpenApi.Description, "Organization API keys, for scripts and tool servers")
{}
