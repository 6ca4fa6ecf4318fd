import { HttpApiClient, HttpClient, HttpClientError, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import {
  type PostId,
  PostlineApi,
  type PostlineClient,
  type PostNowResponse,
  type ScheduleRequest,
  type ScheduleResponse,
  type TargetAccounts,
  type TeamId
} from "@postline/domain"
import type { PlatformError } from "@effect/platform/Error"
import { Clock, Duration, Effect, Layer, Option, Redacted, Ref } from "effect"
import { LoginRequired, loginAgain, NotConfigured } from "./Errors.js"
import { idempotencyKeyHeader, type RetryOptions, withRetries } from "./Retry.js"
import { type StoredLogin, TokenStore, type TokenStoreShape } from "./TokenStore.js"

export const defaultBaseUrl = "http://localhost:3000"
export const defaultClientId = "postline-sdk"

export interface PostlineOptions {
  /** The server; else `POSTLINE_URL`, else the stored login's, else `http://localhost:3000`. */
  readonly baseUrl?: string | undefined
  /** A user's access token (`plt_…`); else `POSTLINE_TOKEN`. */
  readonly token?: string | Redacted.Redacted | undefined
  /** An organization's API key (`plk_…`); else `POSTLINE_API_KEY`. Taken before a token given the same way. */
  readonly apiKey?: string | Redacted.Redacted | undefined
  /**
   * The client_id of this program's logins (default `postline-sdk`): pass the same to `deviceLogin`. A stored login
   * is always refreshed with the client_id it was issued to.
   */
  readonly clientId?: string | undefined
  /** Where `POSTLINE_URL`, `POSTLINE_API_KEY` and `POSTLINE_TOKEN` are read; default `process.env`. */
  readonly env?: Record<string, string | undefined> | undefined
  /** Retries of failed requests (see `RetryOptions`). */
  readonly retry?: RetryOptions | undefined
  /** How long before its expiry a login's access token is refreshed; default 60 seconds. */
  readonly refreshBefore?: Duration.DurationInput | undefined
}

/** Where the bearer came from. */
export type CredentialsSource = "api-key" | "access-token" | "login"

const processEnv = (): Record<string, string | undefined> =>
  (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env ?? {}

const nonEmpty = (value: string | undefined) => (value === undefined || value.trim() === "" ? undefined : value.trim())

const asSecret = (value: string | Redacted.Redacted | undefined): Redacted.Redacted | undefined => {
  if (value === undefined) return undefined
  const text = Redacted.isRedacted(value) ? Redacted.value(value) : value
  return text.trim() === "" ? undefined : Redacted.make(text.trim())
}

/** A base URL without its trailing slashes, so that two spellings of one server compare equal. */
export const normalizeBaseUrl = (url: string) => url.trim().replace(/\/+$/, "")

const notConfigured = new NotConfigured({
  message: "No Postline credentials: set POSTLINE_API_KEY (an organization's API key, plk_…) or POSTLINE_TOKEN " +
    "(an access token, plt_…), or run `postline login`"
})

/** The credentials chosen: explicit options, else the environment, else the token store. */
type Chosen =
  | { readonly source: "api-key" | "access-token"; readonly token: Redacted.Redacted }
  | { readonly source: "login"; readonly login: StoredLogin }

const chooseCredentials = (
  options: PostlineOptions,
  env: Record<string, string | undefined>,
  stored: Option.Option<StoredLogin>,
  baseUrl: string
): Effect.Effect<Chosen, NotConfigured> => {
  const given: ReadonlyArray<[CredentialsSource, Redacted.Redacted | undefined]> = [
    ["api-key", asSecret(options.apiKey)],
    ["access-token", asSecret(options.token)],
    ["api-key", asSecret(env.POSTLINE_API_KEY)],
    ["access-token", asSecret(env.POSTLINE_TOKEN)]
  ]
  for (const [source, token] of given) {
    if (token !== undefined) return Effect.succeed({ source: source as "api-key" | "access-token", token })
  }
  if (Option.isNone(stored)) return Effect.fail(notConfigured)
  const login = stored.value
  if (normalizeBaseUrl(login.baseUrl) !== baseUrl) {
    return Effect.fail(
      new NotConfigured({
        message: `The stored login is for ${login.baseUrl}, not ${baseUrl}: run \`postline login\` for ${baseUrl}, ` +
          "or set POSTLINE_API_KEY or POSTLINE_TOKEN"
      })
    )
  }
  return Effect.succeed({ source: "login", login })
}

/** A client of the API without a bearer, with retries: for the OAuth endpoints of the device login and the health check. */
export const makePlainClient = (baseUrl: string, retry?: RetryOptions): Effect.Effect<PostlineClient, never, HttpClient.HttpClient> =>
  Effect.flatMap(HttpClient.HttpClient, (http) =>
    HttpApiClient.makeWith(PostlineApi, { httpClient: withRetries(retry)(http), baseUrl }))

type PlainClient = PostlineClient

/** The bearer of every request: a fixed token, or a login's access token, refreshed when due or refused. */
interface Bearer {
  readonly current: Effect.Effect<Redacted.Redacted, RefreshError>
  /** A new access token after `used` was refused; none for a fixed token. */
  readonly renew: Option.Option<(used: Redacted.Redacted) => Effect.Effect<Redacted.Redacted, RefreshError>>
  readonly login: Effect.Effect<Option.Option<StoredLogin>>
}

/** What refreshing a login can fail with: `LoginRequired` when the login has ended, else the token request's errors. */
export type RefreshError = Effect.Effect.Error<ReturnType<PostlineClient["auth"]["token"]>> | LoginRequired

const fixedBearer = (token: Redacted.Redacted): Bearer => ({
  current: Effect.succeed(token),
  renew: Option.none(),
  login: Effect.succeedNone
})

const sameSecret = (a: Redacted.Redacted, b: Redacted.Redacted) => Redacted.value(a) === Redacted.value(b)

/**
 * A login's tokens: refreshed `refreshBefore` their expiry or when the server refuses the access token, one refresh
 * at a time (the others wait for it and use its token), each rotated pair saved to the store before it is used.
 * A process that shares the store may have rotated the login first: its newer tokens are taken from the store
 * rather than refreshing with a used refresh token, which would end the login.
 */
const loginBearer = (initial: StoredLogin, store: TokenStoreShape, plain: PlainClient, refreshBefore: Duration.Duration) =>
  Effect.gen(function*() {
    const state = yield* Ref.make(initial)
    const lock = yield* Effect.makeSemaphore(1)
    const isDue = (login: StoredLogin, now: number) =>
      login.accessTokenExpiresAt.getTime() - now <= Duration.toMillis(refreshBefore)

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

    const renew = (used: Redacted.Redacted) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const current = yield* Ref.get(state)
        if (!sameSecret(current.accessToken, used) && !isDue(current, now)) return current.accessToken
        let basis = current
        const stored = yield* store.load
        if (
          Option.isSome(stored) && normalizeBaseUrl(stored.value.baseUrl) === normalizeBaseUrl(current.baseUrl) &&
          stored.value.clientId === current.clientId && !sameSecret(stored.value.refreshToken, current.refreshToken) &&
          stored.value.accessTokenExpiresAt.getTime() > current.accessTokenExpiresAt.getTime()
        ) {
          basis = stored.value
          yield* Ref.set(state, basis)
          if (!sameSecret(basis.accessToken, used) && !isDue(basis, now)) return basis.accessToken
        }
        return yield* refreshWith(basis)
      }))

    const current = Effect.gen(function*() {
      const login = yield* Ref.get(state)
      return isDue(login, yield* Clock.currentTimeMillis) ? yield* renew(login.accessToken) : login.accessToken
    })

    return { current, renew: Option.some(renew), login: Effect.map(Ref.get(state), Option.some) } satisfies Bearer
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
const bearerClient = (
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

export interface PostNowRequest {
  readonly teamId: TeamId
  readonly postId: PostId
  readonly payload: TargetAccounts
  /** Sent as the Idempotency-Key; default a new UUID for each run of the effect. */
  readonly idempotencyKey?: string | undefined
}

export interface SchedulePostRequest {
  readonly teamId: TeamId
  readonly postId: PostId
  readonly payload: ScheduleRequest
  /** Sent as the Idempotency-Key; default a new UUID for each run of the effect. */
  readonly idempotencyKey?: string | undefined
}

export type PostNowError = Effect.Effect.Error<ReturnType<PostlineClient["posts"]["postNow"]>>
export type SchedulePostError = Effect.Effect.Error<ReturnType<PostlineClient["posts"]["schedulePost"]>>
export type LogoutError = Effect.Effect.Error<ReturnType<PostlineClient["auth"]["revoke"]>> | PlatformError

/** The Postline service's value. */
export interface PostlineShape {
  /** The server, without a trailing slash. */
  readonly baseUrl: string
  /** Where the bearer came from: an API key or access token (given or from the environment), or the stored login. */
  readonly credentials: CredentialsSource
  /** The domain's typed client with the bearer added, a login's tokens refreshed and safe requests retried. */
  readonly client: PostlineClient
  /** Publishes a post now under an Idempotency-Key (the one given, else a new one), which its retries reuse. */
  readonly postNow: (request: PostNowRequest) => Effect.Effect<
    { readonly idempotencyKey: string; readonly response: PostNowResponse },
    PostNowError
  >
  /** Schedules a post under an Idempotency-Key (the one given, else a new one), which its retries reuse. */
  readonly schedulePost: (request: SchedulePostRequest) => Effect.Effect<
    { readonly idempotencyKey: string; readonly response: ScheduleResponse },
    SchedulePostError
  >
  /**
   * Ends the stored login on its server (this service's own login, when it uses one) at /v1/auth/revoke, then
   * removes it from the store; nothing stored is nothing to do. When the server cannot be told, the store keeps it.
   */
  readonly logout: Effect.Effect<void, LogoutError>
}

const make = (options: PostlineOptions = {}): Effect.Effect<
  PostlineShape,
  NotConfigured | RefreshError,
  HttpClient.HttpClient | TokenStore
> =>
  Effect.gen(function*() {
    const env = options.env ?? processEnv()
    const store = yield* TokenStore
    const http = yield* HttpClient.HttpClient
    const stored = yield* store.load
    const baseUrl = normalizeBaseUrl(
      nonEmpty(options.baseUrl) ?? nonEmpty(env.POSTLINE_URL) ?? Option.getOrUndefined(Option.map(stored, (login) => login.baseUrl)) ??
        defaultBaseUrl
    )
    const retrying = withRetries(options.retry)(http)
    const plain = yield* HttpApiClient.makeWith(PostlineApi, { httpClient: retrying, baseUrl })
    const chosen = yield* chooseCredentials(options, env, stored, baseUrl)
    const refreshBefore = Duration.decode(options.refreshBefore ?? Duration.seconds(60))
    const bearer = chosen.source === "login"
      ? yield* loginBearer(chosen.login, store, plain, refreshBefore)
      : fixedBearer(chosen.token)
    // A login whose access token is due is refreshed now, so that a login that has ended fails here, as LoginRequired.
    yield* bearer.current

    const client: PostlineClient = yield* HttpApiClient.makeWith(PostlineApi, {
      httpClient: bearerClient(retrying, bearer),
      baseUrl
    })

    const postNow = (request: PostNowRequest) =>
      Effect.suspend(() => {
        const idempotencyKey = request.idempotencyKey ?? crypto.randomUUID()
        return Effect.map(
          client.posts.postNow({
            path: { teamId: request.teamId, postId: request.postId },
            payload: request.payload,
            headers: { [idempotencyKeyHeader]: idempotencyKey }
          }),
          (response): { readonly idempotencyKey: string; readonly response: PostNowResponse } => ({ idempotencyKey, response })
        )
      })

    const schedulePost = (request: SchedulePostRequest) =>
      Effect.suspend(() => {
        const idempotencyKey = request.idempotencyKey ?? crypto.randomUUID()
        return Effect.map(
          // The client takes each member of the payload's union on its own; this is one of them.
          client.posts.schedulePost({
            path: { teamId: request.teamId, postId: request.postId },
            payload: request.payload,
            headers: { [idempotencyKeyHeader]: idempotencyKey }
          } as Parameters<PostlineClient["posts"]["schedulePost"]>[0] & { readonly withResponse?: false }),
          (response): { readonly idempotencyKey: string; readonly response: ScheduleResponse } => ({ idempotencyKey, response })
        )
      })

    const logout = Effect.gen(function*() {
      const own = yield* bearer.login
      const target = Option.isSome(own) ? own : yield* store.load
      if (Option.isNone(target)) return
      const revoker = normalizeBaseUrl(target.value.baseUrl) === baseUrl
        ? plain
        : yield* HttpApiClient.makeWith(PostlineApi, { httpClient: retrying, baseUrl: normalizeBaseUrl(target.value.baseUrl) })
      yield* revoker.auth.revoke({ payload: { token: target.value.refreshToken, token_type_hint: "refresh_token" } })
      yield* store.clear
    })

    return {
      baseUrl,
      credentials: chosen.source,
      client,
      postNow,
      schedulePost,
      logout
    } as const
  })

/**
 * The Postline API as a service: its base URL, where its credentials came from, the typed client of
 * `@postline/domain` with the bearer added (a device login's tokens refreshed, safe requests retried), and
 * `postNow` / `schedulePost` with an Idempotency-Key per call.
 *
 * Credentials: explicit options, else the environment (`POSTLINE_API_KEY`, `POSTLINE_TOKEN`), else the token
 * store's device login; none gives `NotConfigured`. `Postline.layer(options?)` needs an `HttpClient` and a
 * `TokenStore`; `Postline.layerNode(options?)` has Node's.
 */
export class Postline extends Effect.Service<Postline>()("@postline/sdk/Postline", {
  effect: (options?: PostlineOptions) => make(options)
}) {
  /** The service, from an `HttpClient` and a `TokenStore` of the caller's. */
  static readonly layer = (options?: PostlineOptions) => Postline.Default(options)

  /** The service with Node's HTTP client and the file token store (whose place `options.env` may move). */
  static readonly layerNode = (options?: PostlineOptions) =>
    Postline.Default(options).pipe(
      Layer.provide(Layer.merge(NodeHttpClient.layer, TokenStore.layerNode({ env: options?.env })))
    )
}
