import { HttpApiClient, HttpClient, HttpClientRequest, HttpServer } from "@effect/platform"
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { PostlineApi } from "@postline/domain"
import { type ConfigError, Effect, Layer, Logger, LogLevel, Redacted } from "effect"
import { randomBytes, randomUUID } from "node:crypto"
import { createServer } from "node:http"
import { makeHttpLive } from "../../src/Api.js"
import { CredentialsCipher } from "../../src/Secrets/CredentialsCipher.js"
import type { OAuthNetworks } from "../../src/Providers/OAuthNetworks.js"
import type { SocialProviders } from "../../src/Providers/Registry.js"
import type { SqlClient } from "@effect/sql"
import { SoleProcess } from "../../src/Database/SoleProcess.js"
import { SchedulerLive } from "../../src/Workers.js"
import { UsersRepo } from "../../src/Users/Repo.js"
import type { MediaStorage } from "../../src/Assets/Storage.js"
import { StorageSweepLive } from "../../src/Assets/Sweep.js"
import { LocalOAuthNetworks, LocalProviders } from "./Providers.js"
import { TestDatabase } from "./TestDatabase.js"
import { freshTestStorage } from "./TestStorage.js"

/** A cipher with a key of its own, as a server configured with CREDENTIALS_KEY has. */
export const TestCipher = Layer.suspend(() =>
  CredentialsCipher.Default({ current: Redacted.make(randomBytes(32).toString("base64")), previous: [] })
)

/**
 * NodeHttpServer.layerTest, but the server keeps an idle connection open for ten minutes instead of Node's five
 * seconds. On a loaded machine `fetch` (undici) reused a kept-alive connection just as the server closed it, and the
 * request met ECONNRESET; now only the client closes idle connections, which it knows before reusing one. When the
 * tests are done, every connection is ended before the server closes: a close waits for those still open, and one
 * Node did not count as idle held a file's end for those ten minutes.
 */
export const InProcessHttpServer = Layer.unwrapEffect(Effect.sync(() => {
  const server = createServer({ keepAliveTimeout: 600_000 })
  const endConnectionsFirst = Layer.scopedDiscard(Effect.addFinalizer(() => Effect.sync(() => server.closeAllConnections())))
  return endConnectionsFirst.pipe(
    Layer.provideMerge(HttpServer.layerTestClient),
    Layer.provide(NodeHttpClient.layerWithoutAgent),
    Layer.provide(NodeHttpClient.makeAgentLayer({ keepAlive: false })),
    Layer.provideMerge(NodeHttpServer.layer(() => server, { port: 0 }))
  )
}))

/**
 * The real HTTP stack, in-process, over a fresh database and a fresh media folder (or the storage given),
 * logging through `logging`; the social providers and the sign-in networks may reach this machine (their fakes
 * listen on it) unless others are given.
 */
export const makeTestServer = (
  logging: Layer.Layer<never>,
  providers: Layer.Layer<SocialProviders, ConfigError.ConfigError> = LocalProviders,
  storage: Layer.Layer<MediaStorage> = freshTestStorage("filesystem"),
  networks: Layer.Layer<OAuthNetworks, ConfigError.ConfigError, SqlClient.SqlClient | CredentialsCipher> = LocalOAuthNetworks
) =>
  makeHttpLive({ accessLog: false }).pipe(
    Layer.provideMerge(InProcessHttpServer),
    Layer.provideMerge(UsersRepo.Default),
    // The scheduler runs in this process, as on the embedded database.
    Layer.provideMerge(SchedulerLive.pipe(Layer.provide(Layer.succeed(SoleProcess, true)))),
    Layer.provideMerge(Layer.provideMerge(StorageSweepLive, storage)),
    Layer.provide(providers),
    Layer.provideMerge(networks),
    Layer.provideMerge(TestCipher),
    Layer.provideMerge(TestDatabase),
    Layer.provide(logging)
  )

// Request logs would drown the test output; failures are logged as errors.
export const TestServer = makeTestServer(Logger.minimumLogLevel(LogLevel.Warning))

const clientFor = (token: string) =>
  HttpApiClient.make(PostlineApi, {
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
  })

/** A new user with a token, and the typed client that acts as them. */
export const signUp = (name = "Test User") =>
  Effect.gen(function*() {
    const users = yield* UsersRepo
    const { token, user } = yield* users.createWithToken({ email: `${randomUUID()}@example.com`, name })
    return { user, token, client: yield* clientFor(token) }
  })

export interface RawResponse {
  readonly status: number
  readonly contentType: string | null
  readonly headers: { get(name: string): string | null }
  readonly body: any
}

/**
 * A request the typed client would refuse to send: any body, any headers. The
 * body is sent as bytes, so no content type is set unless one is given.
 */
export const raw = (options: {
  readonly method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE"
  readonly path: string
  readonly token?: string
  readonly headers?: Record<string, string>
  readonly body?: string
  readonly json?: unknown
}) =>
  Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const address = server.address as HttpServer.TcpAddress
    const headers: Record<string, string> = { ...options.headers }
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    if (options.json !== undefined) headers["content-type"] ??= "application/json"
    const body = options.json !== undefined ? JSON.stringify(options.json) : options.body
    const response = yield* Effect.promise(() =>
      fetch(`http://127.0.0.1:${address.port}${options.path}`, {
        method: options.method,
        headers,
        redirect: "manual",
        ...(body !== undefined ? { body: new TextEncoder().encode(body) } : {})
      })
    )
    const text = yield* Effect.promise(() => response.text())
    const contentType = response.headers.get("content-type")
    const result: RawResponse = {
      status: response.status,
      contentType,
      headers: response.headers,
      body: contentType?.startsWith("application/json") ? JSON.parse(text) : text
    }
    return result
  })
