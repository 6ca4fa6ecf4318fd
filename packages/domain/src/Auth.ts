import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { integer, invalidUnless, optional } from "./Fields.js"
import { AddressRateLimit } from "./RateLimits.js"

/**
 * The device-authorization login of agent clients (RFC 8628), its token
 * endpoint (RFC 6749) and token revocation (RFC 7009). These endpoints speak
 * OAuth: form-encoded parameters, snake_case names, OAuth error codes.
 */

export const OAuthErrorCode = Schema.Literal(
  "invalid_request",
  "invalid_grant",
  "unsupported_grant_type",
  "unsupported_token_type",
  "authorization_pending",
  "slow_down",
  "access_denied",
  "expired_token"
).annotations({
  identifier: "OAuthErrorCode",
  description: "An error code of RFC 6749 §5.2, RFC 8628 §3.5 or RFC 7009 §2.2.1"
})
export type OAuthErrorCode = typeof OAuthErrorCode.Type

/** The RFC's `error` and `error_description`, beside the `_tag` and `message` every error of this API has. */
export class OAuthError extends Schema.TaggedError<OAuthError>()(
  "OAuthError",
  {
    error: OAuthErrorCode,
    error_description: Schema.String,
    message: Schema.String.annotations({ description: "The same text as error_description" })
  },
  HttpApiSchema.annotations({ status: 400, description: "An OAuth error: `error` says which" })
) {}

export const oauthError = (error: OAuthErrorCode, description: string) =>
  new OAuthError({ error, error_description: description, message: description })

const parameter = (description: string) =>
  Schema.String.annotations({ description, ...invalidUnless("must be given once, as a string") })

/**
 * A parameter that holds a secret: decoded as `Redacted`, so that it is never logged. An empty one
 * counts as absent (RFC 6749 §3.1), so the document asks for at least one character.
 */
const secretParameter = (description: string) =>
  Schema.Redacted(
    Schema.String.pipe(Schema.filter((s) => s.length > 0, { jsonSchema: { minLength: 1 } })).annotations({
      description,
      ...invalidUnless("must be given once, as a non-empty string")
    })
  )

// RFC 6749 appendix A: VSCHAR is printable ASCII.
const ClientId = Schema.String.pipe(Schema.pattern(/^[\x20-\x7E]{1,255}$/)).annotations({
  identifier: "ClientId",
  description: "Names the client, e.g. `postline-cli`; 1 to 255 printable ASCII characters. No registration is needed.",
  ...invalidUnless("must be 1 to 255 printable ASCII characters")
})

// RFC 6749 §3.3: space-separated tokens of printable ASCII without `"` and `\`. An empty scope
// counts as absent (RFC 6749 §3.1), and is accepted as such.
const scopeTokens = /^(?:[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*)?$/
const Scope = Schema.String.pipe(
  Schema.filter((s) => s.length <= 1000 && scopeTokens.test(s), {
    jsonSchema: { pattern: scopeTokens.source, maxLength: 1000 }
  })
).annotations({
  identifier: "Scope",
  description: "Space-separated scope tokens (RFC 6749 §3.3), at most 1000 characters; kept with the login. Empty " +
    "means no scope, as if absent",
  ...invalidUnless("must be space-separated scope tokens of printable ASCII, at most 1000 characters")
})

// Unknown parameters are ignored (RFC 6749 §3.1), so these structs are not strict, and say so.
const ignoresUnknownParameters = { jsonSchema: { additionalProperties: true } }

export const DeviceCodeRequest = Schema.Struct({
  client_id: ClientId,
  scope: optional(Scope)
}).annotations({ ...ignoresUnknownParameters, identifier: "DeviceCodeRequest" })

export const deviceCodeGrantType = "urn:ietf:params:oauth:grant-type:device_code"

export const DeviceCodeGrant = Schema.Struct({
  grant_type: Schema.Literal(deviceCodeGrantType),
  device_code: secretParameter("The device_code of the device authorization response"),
  client_id: ClientId.annotations({ description: "The client_id the device code was issued to" })
}).annotations({
  ...ignoresUnknownParameters,
  identifier: "DeviceCodeGrant", description: "Polls for the tokens of a device authorization" })

export const RefreshTokenGrant = Schema.Struct({
  grant_type: Schema.Literal("refresh_token"),
  refresh_token: secretParameter("The latest refresh token of the login"),
  client_id: ClientId.annotations({ description: "The client_id the login was granted to" })
}).annotations({
  ...ignoresUnknownParameters,
  identifier: "RefreshTokenGrant",
  description: "Exchanges a refresh token for a new access and refresh token"
})

export const RevocationRequest = Schema.Struct({
  token: secretParameter("An access token (`plt_…`) or refresh token (`plr_…`)"),
  token_type_hint: optional(parameter("`access_token` or `refresh_token`; not needed, both kinds are looked up")),
  client_id: optional(parameter("Accepted and not checked: holding a token is enough to end it"))
}).annotations({ ...ignoresUnknownParameters, identifier: "RevocationRequest" })

const seconds = integer

export const DeviceAuthorizationResponse = Schema.Struct({
  device_code: Schema.String.annotations({ description: "Secret of the device (`pld_…`): poll the token endpoint with it" }),
  user_code: Schema.String.annotations({ description: "Eight letters shown as `XXXX-XXXX`, for the user to enter at verification_uri" }),
  verification_uri: Schema.String.annotations({ description: "The approval page, `<origin>/device`" }),
  verification_uri_complete: Schema.String.annotations({ description: "The approval page with the user code filled in" }),
  expires_in: seconds("Seconds until device_code and user_code expire"),
  interval: seconds("Seconds to wait between polls of the token endpoint")
}).annotations({ identifier: "DeviceAuthorizationResponse" })

export const TokenResponse = Schema.Struct({
  access_token: Schema.String.annotations({ description: "Bearer token (`plt_…`) for the API" }),
  token_type: Schema.Literal("Bearer"),
  expires_in: seconds("Seconds until the access token expires"),
  refresh_token: Schema.String.annotations({ description: "Single-use refresh token (`plr_…`)" })
}).annotations({ identifier: "TokenResponse" })

/** RFC 8414 metadata: what an OAuth client library needs to run the device login from the issuer's address alone. */
export const AuthorizationServerMetadata = Schema.Struct({
  issuer: Schema.String.annotations({ description: "`PUBLIC_URL`, else `http://` and the Host of the request" }),
  device_authorization_endpoint: Schema.String,
  token_endpoint: Schema.String,
  revocation_endpoint: Schema.String,
  grant_types_supported: Schema.Array(Schema.String),
  response_types_supported: Schema.Array(Schema.String).annotations({
    description: "Empty: there is no authorization endpoint, only the device login"
  }),
  token_endpoint_auth_methods_supported: Schema.Array(Schema.String),
  revocation_endpoint_auth_methods_supported: Schema.Array(Schema.String)
}).annotations({ identifier: "AuthorizationServerMetadata" })

// OAuth parameters come form-encoded (RFC 6749 appendix B); JSON bodies are accepted too.
const urlParams = { kind: "UrlParams" } as const

export class AuthGroup extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.post("requestDeviceCode", "/v1/auth/device/code")
      .setPayload(Schema.Union(HttpApiSchema.withEncoding(DeviceCodeRequest, urlParams), DeviceCodeRequest))
      .addSuccess(DeviceAuthorizationResponse)
      .annotate(OpenApi.Summary, "Start a device login")
      .annotate(
        OpenApi.Description,
        "Device authorization request (RFC 8628 §3.1). Show the user `user_code` and `verification_uri` (or open " +
          "`verification_uri_complete`), then poll the token endpoint every `interval` seconds until the user has " +
          "approved or denied, or the codes expire after `expires_in` seconds."
      )
  )
  .add(
    HttpApiEndpoint.post("token", "/v1/auth/token")
      .setPayload(
        Schema.Union(
          HttpApiSchema.withEncoding(DeviceCodeGrant, urlParams),
          HttpApiSchema.withEncoding(RefreshTokenGrant, urlParams),
          DeviceCodeGrant,
          RefreshTokenGrant
        )
      )
      .addSuccess(TokenResponse)
      .annotate(OpenApi.Summary, "Get tokens")
      .annotate(
        OpenApi.Description,
        "Token request (RFC 6749 §4.1.3 with the device_code grant of RFC 8628 §3.4, or §6 refresh). Until the user " +
          "decides, polls answer `authorization_pending`, or `slow_down` when they come sooner than the interval " +
          "(which then grows by 5 seconds). A device code yields tokens once. A refresh token is single-use: the " +
          "answer holds its successor, and presenting a used one again ends the whole login. A `client_id` other " +
          "than the one the code or login was issued to gives `invalid_grant`."
      )
  )
  .add(
    HttpApiEndpoint.post("revoke", "/v1/auth/revoke")
      .setPayload(Schema.Union(HttpApiSchema.withEncoding(RevocationRequest, urlParams), RevocationRequest))
      .addSuccess(HttpApiSchema.Empty(200))
      .annotate(OpenApi.Summary, "Log out")
      .annotate(
        OpenApi.Description,
        "Token revocation (RFC 7009). An access or refresh token of a device login ends the whole login; a personal " +
          "access token is deleted. Unknown tokens also answer 200. API keys give `unsupported_token_type`: revoke " +
          "them with DELETE /v1/organizations/{organizationId}/api-keys/{apiKeyId}."
      )
  )
  .add(
    HttpApiEndpoint.get("authorizationServerMetadata", "/.well-known/oauth-authorization-server")
      .addSuccess(AuthorizationServerMetadata)
      .annotate(OpenApi.Summary, "OAuth discovery")
      .annotate(
        OpenApi.Description,
        "Authorization server metadata (RFC 8414): the issuer, the device authorization, token and revocation " +
          "endpoints and the grant types, so that an OAuth client library can run the device login from the " +
          "server's address alone. Clients are public: they authenticate with nothing but their client_id."
      )
  )
  .addError(OAuthError)
  .middleware(AddressRateLimit)
  .annotate(OpenApi.Title, "auth")
  .annotate(
    OpenApi.Description,
    "Device login for agent clients (RFC 8628): no bearer token needed. Responses are never cached."
  )
{}
