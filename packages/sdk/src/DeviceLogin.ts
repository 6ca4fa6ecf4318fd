import { type DeviceAuthorizationResponse, deviceCodeGrantType, type TokenResponse } from "@postline/domain"
import { Clock, Duration, Effect, Redacted } from "effect"
import { defaultBaseUrl, defaultClientId, normalizeBaseUrl } from "./Credentials.js"
import { DeviceLoginFailed } from "./Errors.js"
import { makePlainClient, type RetryOptions } from "./Retry.js"
import { type StoredLogin, TokenStore } from "./TokenStore.js"

export interface DeviceLoginOptions<E = never, R = never> {
  /** The server; default `http://localhost:3000`. */
  readonly baseUrl?: string | undefined
  /** Names this client to the server and the user; default `postline-sdk`. */
  readonly clientId?: string | undefined
  /** Space-separated scope tokens kept with the login. */
  readonly scope?: string | undefined
  /** Shows the user where to go and which code to enter (`verification_uri_complete` has it filled in). */
  readonly onCode: (code: typeof DeviceAuthorizationResponse.Type) => Effect.Effect<void, E, R>
  readonly retry?: RetryOptions | undefined
}

/**
 * The device login (RFC 8628): asks the server for a code, hands it to `onCode`, then polls the token endpoint
 * every `interval` seconds (5 more after each `slow_down`) until the user approves or denies, or the code expires:
 * the server says so, or `expires_in` seconds pass, whichever comes first. The approved login is saved to the
 * token store and returned; a denied, expired or refused one fails with `DeviceLoginFailed`.
 */
export const deviceLogin = <E = never, R = never>(options: DeviceLoginOptions<E, R>) =>
  Effect.gen(function*() {
    const baseUrl = normalizeBaseUrl(options.baseUrl ?? defaultBaseUrl)
    const clientId = options.clientId ?? defaultClientId
    const store = yield* TokenStore
    const client = yield* makePlainClient(baseUrl, options.retry)

    const code = yield* client.auth.requestDeviceCode({
      payload: options.scope === undefined ? { client_id: clientId } : { client_id: clientId, scope: options.scope }
    })
    yield* options.onCode(code)

    type TokenError = Effect.Effect.Error<ReturnType<typeof client.auth.token>>
    const poll = (intervalSeconds: number): Effect.Effect<typeof TokenResponse.Type, TokenError | DeviceLoginFailed> =>
      Effect.sleep(Duration.seconds(intervalSeconds)).pipe(
        Effect.zipRight(client.auth.token({
          payload: { grant_type: deviceCodeGrantType, device_code: Redacted.make(code.device_code), client_id: clientId }
        })),
        Effect.catchTag("OAuthError", (error) => {
          switch (error.error) {
            case "authorization_pending":
              return poll(intervalSeconds)
            case "slow_down":
              return poll(intervalSeconds + 5)
            default:
              return new DeviceLoginFailed({ error: error.error, message: error.error_description })
          }
        })
      )

    const tokens = yield* poll(code.interval).pipe(
      Effect.timeoutFail({
        duration: Duration.seconds(code.expires_in),
        onTimeout: () =>
          new DeviceLoginFailed({
            error: "expired_token",
            message: `The code was not approved within ${code.expires_in} seconds: start the login again`
          })
      })
    )
    const now = yield* Clock.currentTimeMillis
    const login: StoredLogin = {
      baseUrl,
      clientId,
      accessToken: Redacted.make(tokens.access_token),
      refreshToken: Redacted.make(tokens.refresh_token),
      accessTokenExpiresAt: new Date(now + tokens.expires_in * 1000)
    }
    // Under the lock, so that a refresh of the login it replaces cannot save over it.
    yield* store.withLock(store.save(login))
    return login
  })
