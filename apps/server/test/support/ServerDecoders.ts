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

const accepts = (schema: Schema.Schema<any, any, never>): Decoder => {
  const decode = Schema.decodeUnknownEither(schema)
  return (value) => Either.isRight(decode(value))
}

const optionalDecoder = (schema: Option.Option<Schema.Schema<any, any, any>>) =>
  Option.match(schema, { onNone: () => undefined, onSome: (s) => accepts(s as Schema.Schema<any, any, never>) })

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

/** The decoders the server runs on each operation's inputs, by operation id, as HttpApiBuilder runs them. */
export const serverDecoders: ReadonlyMap<string, ServerDecoders> = new Map(
  Object.values(PostlineApi.groups).flatMap((group) =>
    Object.values(group.endpoints as unknown as Record<string, HttpApiEndpoint.HttpApiEndpoint.AnyWithProps>).map((endpoint) => {
      const id = `${group.identifier}.${endpoint.name}`
      return [id, {
        pathParameters: optionalDecoder(endpoint.pathSchema),
        query: optionalDecoder(endpoint.urlParamsSchema),
        body: oauthBodies[id] ?? optionalDecoder(endpoint.payloadSchema)
      }] as const
    })
  )
)
