import { HttpApiClient, HttpClient, HttpClientError } from "@effect/platform"
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
import { Duration, Effect, Layer, type Redacted } from "effect"
import { bearerClient, fixedBearer, loginBearer, type RefreshError } from "./Bearer.js"
import { chooseBaseUrl, chooseCredentials, type CredentialsSource } from "./Credentials.js"
import { processEnv } from "./Env.js"
import { type NotConfigured, PublishInDoubt } from "./Errors.js"
import { logout, type LogoutError } from "./Logout.js"
import { idempotencyKeyHeader, makePlainClient, type RetryOptions, withRetries } from "./Retry.js"
import { TokenStore } from "./TokenStore.js"

export interface PostlineOptions {
  /** The server; else `POSTLINE_URL`, else the stored login's, else `http://localhost:3000`. */
  readonly baseUrl?: string | undefined
  /** A user's access token (`plt_…`); else `POSTLINE_TOKEN`. */
  readonly token?: string | Redacted.Redacted | undefined
  /** An organization's API key (`plk_…`); else `POSTLINE_API_KEY`. Taken before a token given the same way. */
  readonly apiKey?: string | Redacted.Redacted | undefined
  /** Where `POSTLINE_URL`, `POSTLINE_API_KEY` and `POSTLINE_TOKEN` are read; default `process.env`. */
  readonly env?: Record<string, string | undefined> | undefined
  /** Retries of failed requests (see `RetryOptions`). */
  readonly retry?: RetryOptions | undefined
  /** How long before its expiry a login's access token is refreshed; default 60 seconds. */
  readonly refreshBefore?: Duration.DurationInput | undefined
}

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

export type PostNowError = Effect.Effect.Error<ReturnType<PostlineClient["posts"]["postNow"]>> | PublishInDoubt
export type SchedulePostError = Effect.Effect.Error<ReturnType<PostlineClient["posts"]["schedulePost"]>> | PublishInDoubt

/** The Postline service's value. */
export interface PostlineShape {
  /** The server, without a trailing slash. */
  readonly baseUrl: string
  /** Where the bearer came from: an API key or access token (given or from the environment), or the stored login. */
  readonly credentials: CredentialsSource
  /** The domain's typed client with the bearer added, a login's tokens refreshed and safe requests retried. */
  readonly client: PostlineClient
  /**
   * Publishes a post now under an Idempotency-Key (the one given, else a new one), which its retries reuse; fails
   * with `PublishInDoubt` when the server still runs it after `retry.inDoubtFor`.
   */
  readonly postNow: (request: PostNowRequest) => Effect.Effect<
    { readonly idempotencyKey: string; readonly response: PostNowResponse },
    PostNowError
  >
  /** Schedules a post the same way. */
  readonly schedulePost: (request: SchedulePostRequest) => Effect.Effect<
    { readonly idempotencyKey: string; readonly response: ScheduleResponse },
    SchedulePostError
  >
  /** `logout` with this service's HTTP client, token store and retries. */
  readonly logout: Effect.Effect<void, LogoutError>
}

/** The transport error that carries a `PublishInDoubt` (see `withRetries`). */
const isInDoubt = (error: unknown): error is HttpClientError.RequestError & { readonly cause: PublishInDoubt } =>
  HttpClientError.isHttpClientError(error) && error._tag === "RequestError" && error.cause instanceof PublishInDoubt

/** Sends a request under an Idempotency-Key (the one given, else a new one for each run) and answers it with it. */
const keyed = <A, E>(
  idempotencyKey: string | undefined,
  send: (headers: { readonly [idempotencyKeyHeader]: string }) => Effect.Effect<A, E>
) =>
  Effect.suspend(() => {
    const key = idempotencyKey ?? crypto.randomUUID()
    return send({ [idempotencyKeyHeader]: key }).pipe(
      Effect.map((response) => ({ idempotencyKey: key, response })),
      Effect.mapError((error): E | PublishInDoubt => isInDoubt(error) ? error.cause : error)
    )
  })

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
    const baseUrl = chooseBaseUrl(options.baseUrl, env, stored)
    const chosen = yield* chooseCredentials(options, env, stored, baseUrl)
    const refreshBefore = Duration.decode(options.refreshBefore ?? Duration.seconds(60))
    const bearer = chosen.source === "login"
      ? yield* loginBearer(chosen.login, store, yield* makePlainClient(baseUrl, options.retry), refreshBefore)
      : fixedBearer(chosen.token)
    // A login whose access token is due is refreshed now, so that a login that has ended fails here, as LoginRequired.
    yield* bearer.current

    const client = yield* HttpApiClient.makeWith(PostlineApi, {
      httpClient: bearerClient(withRetries(options.retry)(http), bearer),
      baseUrl
    })

    return {
      baseUrl,
      credentials: chosen.source,
      client,
      postNow: ({ idempotencyKey, payload, postId, teamId }) =>
        keyed(idempotencyKey, (headers) => client.posts.postNow({ path: { teamId, postId }, payload, headers })),
      schedulePost: ({ idempotencyKey, payload, postId, teamId }) =>
        keyed(idempotencyKey, (headers) =>
          // The client takes each member of the payload's union on its own.
          "slot" in payload
            ? client.posts.schedulePost({ path: { teamId, postId }, payload, headers })
            : client.posts.schedulePost({ path: { teamId, postId }, payload, headers })),
      logout: logout({ retry: options.retry }).pipe(
        Effect.provideService(HttpClient.HttpClient, http),
        Effect.provideService(TokenStore, store)
      )
    } satisfies PostlineShape
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
