import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import {
  DeviceCodeGrant,
  deviceCodeGrantType,
  DeviceCodeRequest,
  oauthError,
  PostlineApi,
  RefreshTokenGrant,
  RevocationRequest,
  type TokenResponse
} from "@postline/domain"
import { Config, Effect, Option } from "effect"
import { secretPrefixes } from "../Users/Secrets.js"
import {
  deviceCodeLifetimeSeconds,
  DeviceAuthorizationsRepo,
  pollingIntervalSeconds
} from "./DeviceAuthorizationsRepo.js"
import { accessTokenLifetimeSeconds, type IssuedTokens, LoginsRepo, Refresh } from "./LoginsRepo.js"
import { decodeParameters, noStore, readParameters } from "./OAuthParameters.js"
import { displayUserCode } from "./UserCodes.js"

const tokenResponse = (tokens: IssuedTokens): typeof TokenResponse.Type => ({
  access_token: tokens.accessToken,
  token_type: "Bearer",
  expires_in: accessTokenLifetimeSeconds,
  refresh_token: tokens.refreshToken
})

// host[:port], by name, IPv4 or [IPv6]: a Host header that is anything else is not echoed into a link.
const hostAndPort = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

export const AuthHttpLive = HttpApiBuilder.group(PostlineApi, "auth", (handlers) =>
  Effect.gen(function*() {
    const devices = yield* DeviceAuthorizationsRepo
    const logins = yield* LoginsRepo
    const publicUrl = yield* Config.option(Config.url("PUBLIC_URL"))

    /** Where users reach this server: PUBLIC_URL, else the Host the device used, over http. */
    const originOf = (request: HttpServerRequest.HttpServerRequest) =>
      Option.match(publicUrl, {
        onSome: (url) => url.href.replace(/\/+$/, ""),
        onNone: () => {
          const host = request.headers.host ?? ""
          return `http://${hostAndPort.test(host) ? host : "localhost"}`
        }
      })

    const deviceCodeGrant = ({ client_id, device_code }: typeof DeviceCodeGrant.Type) =>
      Effect.gen(function*() {
        const found = yield* devices.recordPoll(device_code, client_id)
        if (Option.isNone(found)) {
          return yield* oauthError("invalid_grant", "Unknown device code, or one issued to another client")
        }
        const poll = found.value
        if (poll.status === "redeemed") return yield* oauthError("invalid_grant", "The device code has already been used")
        if (poll.status === "denied") return yield* oauthError("access_denied", "The user denied the login")
        if (poll.expired) return yield* oauthError("expired_token", "The device code has expired: start the login again")
        if (poll.status === "pending") {
          return yield* poll.tooSoon
            ? oauthError("slow_down", `Polled too soon: wait ${poll.intervalSeconds} seconds between polls`)
            : oauthError("authorization_pending", "The user has not approved the login yet")
        }
        const tokens = yield* devices.redeem(poll.id)
        if (Option.isNone(tokens)) return yield* oauthError("invalid_grant", "The device code has already been used")
        return tokenResponse(tokens.value)
      })

    const refreshTokenGrant = ({ client_id, refresh_token }: typeof RefreshTokenGrant.Type) =>
      Effect.flatMap(logins.refresh(refresh_token, client_id), Refresh.$match({
        Rotated: ({ tokens }) => Effect.succeed(tokenResponse(tokens)),
        Reused: () =>
          oauthError("invalid_grant", "The refresh token was already used: the login has been ended, log in again"),
        Refused: ({ reason }) => oauthError("invalid_grant", reason)
      }))

    // The handlers read the body themselves: a body the schema refuses is an OAuth invalid_request, not a DecodeError.
    return handlers
      .handleRaw("requestDeviceCode", ({ request }) =>
        Effect.gen(function*() {
          yield* noStore
          const { client_id, scope } = yield* Effect.flatMap(readParameters, decodeParameters(DeviceCodeRequest))
          const { deviceCode, userCode } = yield* devices.create({ clientId: client_id, scope: scope ?? null })
          const verificationUri = `${originOf(request)}/device`
          return {
            device_code: deviceCode,
            user_code: displayUserCode(userCode),
            verification_uri: verificationUri,
            verification_uri_complete: `${verificationUri}?user_code=${displayUserCode(userCode)}`,
            expires_in: deviceCodeLifetimeSeconds,
            interval: pollingIntervalSeconds
          }
        }))
      .handleRaw("token", () =>
        Effect.gen(function*() {
          yield* noStore
          const parameters = yield* readParameters
          const grantType = parameters.grant_type
          if (grantType === undefined) return yield* oauthError("invalid_request", "grant_type is missing")
          if (grantType === deviceCodeGrantType) {
            return yield* Effect.flatMap(decodeParameters(DeviceCodeGrant)(parameters), deviceCodeGrant)
          }
          if (grantType === "refresh_token") {
            return yield* Effect.flatMap(decodeParameters(RefreshTokenGrant)(parameters), refreshTokenGrant)
          }
          return yield* typeof grantType === "string"
            ? oauthError("unsupported_grant_type", `Unsupported grant_type: use ${deviceCodeGrantType} or refresh_token`)
            : oauthError("invalid_request", "grant_type must be given once, as a string")
        }))
      .handleRaw("revoke", () =>
        Effect.gen(function*() {
          yield* noStore
          const { token } = yield* Effect.flatMap(readParameters, decodeParameters(RevocationRequest))
          if (token.startsWith(secretPrefixes.apiKey)) {
            return yield* oauthError(
              "unsupported_token_type",
              "API keys are revoked with DELETE /v1/organizations/{organizationId}/api-keys/{apiKeyId}"
            )
          }
          yield* logins.revoke(token)
        }))
  }))
