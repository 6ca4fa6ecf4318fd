import type { HttpApiEndpoint } from "@effect/platform"
import { DeviceCodeGrant, DeviceCodeRequest, PostlineApi, RefreshTokenGrant, RevocationRequest } from "@postline/domain"
import { Either, Option, Schema } from "effect"
import { withoutEmptyParameters } from "../../src/Auth/OAuthParameters.js"

/** Whether the server's decoder accepts a value; undefined when the operation has no such input. */
export type Decoder = (value: unknown) => boolean

export interface ServerDecoders {
  readonly pathParameters: Decoder | undefined
  readonly query: Decoder | undefined
  readonly body: Decoder | undefined
}

type AnySchema = Schema.Schema<any, any, never>

/** The schemas the server decodes each operation's inputs with. */
export interface ServerSchemas {
  readonly pathParameters: AnySchema | undefined
  readonly query: AnySchema | undefined
  readonly body: AnySchema | undefined
}

const accepts = (schema: Schema.Schema<any, any, never>): Decoder => {
  const decode = Schema.decodeUnknownEither(schema)
  return (value) => Either.isRight(decode(value))
}

const optionalDecoder = (schema: AnySchema | undefined) => schema === undefined ? undefined : accepts(schema)

// The device login's handlers read their parameters themselves: empty ones count as absent, then
// the grant_type chooses the schema (see Auth/Http.ts and Auth/OAuthParameters.ts).
const oauthBody = (schema: Schema.Schema<any, any, never>): Decoder => {
  const decode = accepts(schema)
  return (value) =>
    value !== null && typeof value === "object" && !Array.isArray(value) &&
    decode(withoutEmptyParameters(value as Record<string, unknown>))
}

const oauthBodies: Record<string, Decoder> = {
  "auth.requestDeviceCode": oauthBody(DeviceCodeRequest),
  "auth.token": oauthBody(Schema.Union(DeviceCodeGrant, RefreshTokenGrant)),
  "auth.revoke": oauthBody(RevocationRequest)
}

const schemaOf = (schema: Option.Option<Schema.Schema<any, any, any>>) => Option.getOrUndefined(schema) as AnySchema | undefined

/** By operation id, as the API definition declares them. */
export const serverSchemas: ReadonlyMap<string, ServerSchemas> = new Map(
  Object.values(PostlineApi.groups).flatMap((group) =>
    Object.values(group.endpoints as unknown as Record<string, HttpApiEndpoint.HttpApiEndpoint.AnyWithProps>).map(
      (endpoint) => [`${group.identifier}.${endpoint.name}`, {
        pathParameters: schemaOf(endpoint.pathSchema),
        query: schemaOf(endpoint.urlParamsSchema),
        body: schemaOf(endpoint.payloadSchema)
      }] as const
    )
  )
)

/** The decoders the server runs on each operation's inputs, by operation id, as HttpApiBuilder runs them. */
export const serverDecoders: ReadonlyMap<string, ServerDecoders> = new Map(
  [...serverSchemas].map(([id, schemas]) => [id, {
    pathParameters: optionalDecoder(schemas.pathParameters),
    query: optionalDecoder(schemas.query),
    body: oauthBodies[id] ?? optionalDecoder(schemas.body)
  }])
)
