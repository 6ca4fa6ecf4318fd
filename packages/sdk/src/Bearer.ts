import { HttpClient, HttpClientError, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import type { PostlineClient } from "@postline/domain"
import { Clock, Duration, Effect, Option, Redacted, Ref } from "effect"
import { normalizeBaseUrl } from "./Credentials.js"
import { LoginRequired, loginAgain } from "./Errors.js"
import type { StoredLogin, TokenStoreShape } from "./TokenStore.js"

/** What refreshing a login can fail with: `LoginRequired` when the login has ended, else the token request's errors. */
export type RefreshError = Effect.Effect.Error<ReturnType<PostlineClient["auth"]["token"]>> | LoginRequired

/** The bearer of every request: a fixed token, or a login's access token, refreshed when due or refused. */
export interface Bearer {
  readonly current: Effect.Effect<Redacted.Redacted, RefreshError>
  /** A new access token after `used` was refused; none for a fixed token. */
  readonly renew: Option.Option<(used: Redacted.Redacted) => Effect.Effect<Redacted.Redacted, RefreshError>>
}

export const fixedBearer = (token: Redacted.Redacted): Bearer => ({ current: Effect.succeed(token), renew: Option.none() })

const sameSecret = (a: Redacted.Redacted, b: Redacted.Redacted) => Redacted.value(a) === Redacted.value(b)

/** Whether `stored` is the same login as `current`, rotated since by another holder of the store. */
const rotatedElsewhere = (stored: StoredLogin, current: StoredLogin) =>
  normalizeBaseUrl(stored.baseUrl) === normalizeBaseUrl(current.baseUrl) && stored.clientId === current.clientId &&
  !sameSecret(stored.refreshToken, current.refreshToken) &&
  stored.accessTokenExpiresAt.getTime() > current.accessTokenExpiresAt.getTime()

/**
 * A login's tokens: refreshed `refreshBefore` their expiry or when the server refuses the access token, each
 * rotated pair saved to the store before it is used. One refresh at a time in this process (the others wait for it
 * and use its token), and across processes under the store's lock, within which the store is read again: a
 * process that shares the store may have rotated the login first, and its newer tokens are taken rather than
 * refreshing with a used refresh token, which would end the login.
 */
export const loginBearer = (
  initial: StoredLogin,
  store: TokenStoreShape,
  plain: PostlineClient,
  refreshBefore: Duration.Duration
) =>
  Effect.gen(function*() {
    const state = yield* Ref.make(initial)
    const lock = yield* Effect.makeSemaphore(1)
    const isDue = (login: StoredLogin, now: number) =>
      login.accessTokenExpiresAt.getTime() - now <= Duration.toMillis(refreshBefore)
    /** Whether `login`'s access token may still be used, after `used` was refused or came due. */
    const usable = (login: StoredLogin, used: Redacted.Redacted) =>
      Effect.map(Clock.currentTimeMillis, (now) => !sameSecret(login.accessToken, used) && !isDue(login, now))

    const refreshWith = (basis: StoredLogin) =>
      Effect.gen(function*() {
        const tokens = yield* plain.auth.token({
          payload: { grant_type: "refresh_token", refresh_token: basis.refreshToken, client_id: basis.clientId }
        }).pipe(
          Effect.catchTag("OAuthError", (error) =>
            Effect.fail(
              error.error === "invalid_grant"
                ? new LoginRequired({ message: `The login has ended (${error.error_description}): ${loginAgain}` })
                : error
            ))
        )
        const now = yield* Clock.currentTimeMillis
        const next: StoredLogin = {
          ...basis,
          accessToken: Redacted.make(tokens.access_token),
          refreshToken: Redacted.make(tokens.refresh_token),
          accessTokenExpiresAt: new Date(now + tokens.expires_in * 1000)
        }
        yield* Ref.set(state, next)
        yield* store.save(next).pipe(
          Effect.catchAll((error) =>
            Effect.logWarning(`Postline: the refreshed login could not be saved to ${store.path}`, error)
          )
        )
        return next.accessToken
      }).pipe(Effect.uninterruptible)

    /** Under the store's lock: the store's newer pair when another process rotated the login, else a refresh. */
    const renewShared = (used: Redacted.Redacted) =>
      store.withLock(Effect.gen(function*() {
        const current = yield* Ref.get(state)
        const stored = yield* store.load
        if (Option.isNone(stored) || !rotatedElsewhere(stored.value, current)) return yield* refreshWith(current)
        yield* Ref.set(state, stored.value)
        return (yield* usable(stored.value, used)) ? stored.value.accessToken : yield* refreshWith(stored.value)
      }))

    const renew = (used: Redacted.Redacted) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const current = yield* Ref.get(state)
        // Renewed by the call this one waited for.
        if (yield* usable(current, used)) return current.accessToken
        return yield* renewShared(used)
      }))

    const current = Effect.gen(function*() {
      const login = yield* Ref.get(state)
      return isDue(login, yield* Clock.currentTimeMillis) ? yield* renew(login.accessToken) : login.accessToken
    })

    return { current, renew: Option.some(renew) } satisfies Bearer
  })

/** The answer of a request whose login has ended: the server's 401, with what to do about it. */
const loginEndedResponse = (request: HttpClientRequest.HttpClientRequest, error: LoginRequired) =>
  HttpClientResponse.fromWeb(
    request,
    new Response(JSON.stringify({ _tag: "Unauthorized", message: error.message }), {
      status: 401,
      headers: { "content-type": "application/json" }
    })
  )

/**
 * An HttpClient that sends each request with the bearer, and for a login, once more with a refreshed token when
 * the server refuses the first. A login that has ended answers 401 `Unauthorized` whose message says to log in
 * again; other failures of a refresh fail the request as a transport error whose cause they are.
 */
export const bearerClient = (
  retrying: HttpClient.HttpClient.With<HttpClientError.HttpClientError>,
  bearer: Bearer
): HttpClient.HttpClient =>
  HttpClient.makeWith<never, never, HttpClientError.HttpClientError, never>(
    (prepared) =>
      Effect.flatMap(prepared, (request) =>
        Effect.gen(function*() {
          const token = yield* bearer.current
          const response = yield* retrying.execute(HttpClientRequest.bearerToken(request, token))
          if (response.status !== 401 || Option.isNone(bearer.renew)) return response
          // Read, so that its connection is free for the next request.
          yield* Effect.ignore(response.arrayBuffer)
          const renewed = yield* bearer.renew.value(token)
          return yield* retrying.execute(HttpClientRequest.bearerToken(request, renewed))
        }).pipe(
          Effect.catchAll((error: RefreshError | HttpClientError.HttpClientError) => {
            if (error._tag === "RequestError" || error._tag === "ResponseError") return Effect.fail(error)
            if (error._tag === "LoginRequired") return Effect.succeed(loginEndedResponse(request, error))
            return Effect.fail(
              new HttpClientError.RequestError({
                request,
                reason: "Transport",
                cause: error,
                description: `refreshing the login failed: ${error.message}`
              })
            )
          })
        )),
    Effect.succeed
  )
