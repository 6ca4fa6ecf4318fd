import { oauthError } from "@postline/domain"
import { Data, Effect, Option, Redacted } from "effect"
import { UsersRepo } from "../Users/Repo.js"
import { secretPrefixes } from "../Users/Secrets.js"
import { ApprovalRateLimit } from "./ApprovalRateLimit.js"
import { type Asking, DeviceAuthorizationsRepo } from "./DeviceAuthorizationsRepo.js"
import { type Grant, LoginsRepo, Refresh } from "./LoginsRepo.js"
import { DeviceLoginSettings } from "./Settings.js"

/** What became of an approval on the device page. */
export type Approval = Data.TaggedEnum<{
  /** Too many failures for this address or email: the same answer for both, so it tells nothing of the email. */
  RateLimited: { readonly retryAfterSeconds: number }
  WrongCredentials: {}
  UnknownCode: {}
  ExpiredCode: {}
  Decided: { readonly clientId: Grant["clientId"] }
}>
export const Approval = Data.taggedEnum<Approval>()

/**
 * The device-authorization login (RFC 8628): codes, the token grants and
 * revocation, and the user's decision on the approval page. Secrets arrive
 * and travel as `Redacted`.
 */
export class DeviceLogin extends Effect.Service<DeviceLogin>()("DeviceLogin", {
  effect: Effect.gen(function*() {
    const devices = yield* DeviceAuthorizationsRepo
    const logins = yield* LoginsRepo
    const users = yield* UsersRepo
    const rateLimit = yield* ApprovalRateLimit
    const settings = yield* DeviceLoginSettings

    const requestCode = (asking: Asking) =>
      Effect.map(devices.create(asking), ({ deviceCode, userCode }) => ({
        deviceCode,
        userCode,
        expiresIn: settings.deviceCodeLifetimeSeconds,
        interval: settings.pollingIntervalSeconds
      }))

    /** The device_code grant: tokens once the user has approved, and the RFC's errors until then. */
    const exchangeDeviceCode = (deviceCode: Redacted.Redacted, clientId: Grant["clientId"]) =>
      Effect.gen(function*() {
        const found = yield* devices.recordPoll(deviceCode, clientId)
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
        return tokens.value
      })

    const refresh = (refreshToken: Redacted.Redacted, clientId: Grant["clientId"]) =>
      Effect.flatMap(logins.refresh(refreshToken, clientId), Refresh.$match({
        Rotated: ({ tokens }) => Effect.succeed(tokens),
        Reused: () =>
          oauthError("invalid_grant", "The refresh token was already used: the login has been ended, log in again"),
        Refused: ({ reason }) => oauthError("invalid_grant", reason)
      }))

    /** Ends the token's login, or deletes a personal access token; API keys are deleted through their own endpoint. */
    const revoke = (token: Redacted.Redacted) =>
      Redacted.value(token).startsWith(secretPrefixes.apiKey)
        ? oauthError(
          "unsupported_token_type",
          "API keys are revoked with DELETE /v1/organizations/{organizationId}/api-keys/{apiKeyId}"
        )
        : logins.revoke(token)

    /**
     * The user's decision on the login of `userCode` (normalized). Every attempt that decides no pending login
     * counts as a failure against the address and the email.
     */
    const decide = (input: {
      readonly address: string
      readonly email: string
      readonly password: Redacted.Redacted
      readonly userCode: string
      readonly decision: "approved" | "denied"
    }) =>
      rateLimit.guard(
        input,
        Effect.gen(function*() {
          const user = yield* users.verifyPasswordOf(input.email, input.password)
          if (Option.isNone(user)) return Approval.WrongCredentials()
          const outcome = yield* devices.decide(input.userCode, user.value, input.decision)
          if (outcome._tag === "Unknown") return Approval.UnknownCode()
          if (outcome._tag === "Expired") return Approval.ExpiredCode()
          return Approval.Decided({ clientId: outcome.clientId })
        }),
        Approval.$is("Decided")
      ).pipe(Effect.catchTag("RateLimited", ({ retryAfterSeconds }) => Effect.succeed(Approval.RateLimited({ retryAfterSeconds }))))

    return { requestCode, exchangeDeviceCode, refresh, revoke, pendingLogin: devices.findPending, decide } as const
  }),
  dependencies: [
    DeviceAuthorizationsRepo.Default,
    LoginsRepo.Default,
    UsersRepo.Default,
    ApprovalRateLimit.Default,
    DeviceLoginSettings.Default
  ]
}) {}
