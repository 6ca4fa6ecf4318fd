import { HttpApiBuilder } from "@effect/platform"
import {
  type AuthorizationServerMetadata,
  DeviceCodeGrant,
  deviceCodeGrantType,
  DeviceCodeRequest,
  oauthError,
  PostlineApi,
  RefreshTokenGrant,
  RevocationRequest,
  type TokenResponse
} from "@postline/domain"
import { Effect, Layer } from "effect"
import { PublicOrigin } from "../Http/PublicOrigin.js"
import type { IssuedTokens } from "./LoginsRepo.js"
import { decodeParameters, noStore, readParameters } from "./OAuthParameters.js"
import { DeviceLogin } from "./Service.js"
import { DeviceLoginSettings } from "./Settings.js"
import { displayUserCode } from "./UserCodes.js"

const tokenResponse = (expiresIn: number) => (tokens: IssuedTokens): typeof TokenResponse.Type => ({
  access_token: tokens.accessToken,
  token_type: "Bearer",
  expires_in: expiresIn,
  refresh_token: tokens.refreshToken
})

const metadata = (issuer: string): typeof AuthorizationServerMetadata.Type => ({
  issuer,
  device_authorization_endpoint: `${issuer}/v1/auth/device/code`,
  token_endpoint: `${issuer}/v1/auth/token`,
  revocation_endpoint: `${issuer}/v1/auth/revoke`,
  grant_types_supported: [deviceCodeGrantType, "refresh_token"],
  response_types_supported: [],
  // Public clients: a client_id names the program and nothing authenticates it.
  token_endpoint_auth_methods_supported: ["none"],
  revocation_endpoint_auth_methods_supported: ["none"]
})

export const AuthHttpLive = HttpApiBuilder.group(PostlineApi, "auth", (handlers) =>
  Effect.gen(function*() {
    const login = yield* DeviceLogin
    const toTokenResponse = tokenResponse((yield* DeviceLoginSettings).accessTokenLifetimeSeconds)
    const originOf = (yield* PublicOrigin).of

    // The handlers read the body themselves: a body the schema refuses is an OAuth invalid_request, not a DecodeError.
    return handlers
      .handleRaw("requestDeviceCode", ({ request }) =>
        Effect.gen(function*() {
          yield* noStore
          const { client_id, scope } = yield* Effect.flatMap(readParameters, decodeParameters(DeviceCodeRequest))
          const issued = yield* login.requestCode({ clientId: client_id, scope: scope ?? null })
          const verificationUri = `${originOf(request)}/device`
          return {
            device_code: issued.deviceCode,
            user_code: displayUserCode(issued.userCode),
            verification_uri: verificationUri,
            verification_uri_complete: `${verificationUri}?user_code=${displayUserCode(issued.userCode)}`,
            expires_in: issued.expiresIn,
            interval: issued.interval
          }
        }))
      .handleRaw("token", () =>
        Effect.gen(function*() {
          yield* noStore
          const parameters = yield* readParameters
          const grantType = parameters.grant_type
          if (grantType === undefined) return yield* oauthError("invalid_request", "grant_type is missing")
          if (grantType === deviceCodeGrantType) {
            const grant = yield* decodeParameters(DeviceCodeGrant)(parameters)
            return toTokenResponse(yield* login.exchangeDeviceCode(grant.device_code, grant.client_id))
          }
          if (grantType === "refresh_token") {
            const grant = yield* decodeParameters(RefreshTokenGrant)(parameters)
            return toTokenResponse(yield* login.refresh(grant.refresh_token, grant.client_id))
          }
          return yield* typeof grantType === "string"
            ? oauthError("unsupported_grant_type", `Unsupported grant_type: use ${deviceCodeGrantType} or refresh_token`)
            : oauthError("invalid_request", "grant_type must be given once, as a string")
        }))
      .handleRaw("revoke", () =>
        Effect.gen(function*() {
          yield* noStore
          const { token } = yield* Effect.flatMap(readParameters, decodeParameters(RevocationRequest))
          yield* login.revoke(token)
        }))
      .handle("authorizationServerMetadata", ({ request }) => Effect.succeed(metadata(originOf(request))))
  })).pipe(Layer.provide([DeviceLogin.Default, DeviceLoginSettings.Default, PublicOrigin.Default]))
