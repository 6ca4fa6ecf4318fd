import { HttpClient, type HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { type DeviceAuthorizationResponse, PostId, SocialAccountId, TeamId } from "@postline/domain"
import {
  deviceLogin,
  parseRetryAfter,
  Postline,
  type PostlineOptions,
  type StoredLogin,
  TokenStore
} from "@postline/sdk"
import { Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { makeWebhookReceiver, type ReceivedEvent } from "../support/Publishing.js"
import { publishEnv, publishingSetup } from "../support/ProcessPublishing.js"
import { answer, decideOnDevicePage, drop, forward, makeProxy, userWithPassword } from "../support/SdkServer.js"
import { type ServerProcess, startServer } from "../support/ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir } from "../support/TestDatabase.js"

/** The service of a layer, built in the test's scope (so that its HTTP agent lives as long as the test). */
const build = <E>(layer: Layer.Layer<Postline, E>) =>
  Effect.map(Layer.build(layer), (context) => Context.get(context, Postline))

/** `Postline.layer` over Node's HTTP client and this store. */
const withStore = (options: PostlineOptions, store: Layer.Layer<TokenStore>) =>
  Postline.layer(options).pipe(Layer.provide(Layer.merge(NodeHttpClient.layer, store)))

const storedLogin = (fields: Partial<StoredLogin> = {}): StoredLogin => ({
  baseUrl: "http://stored.example:3000",
  clientId: "postline-cli",
  accessToken: Redacted.make("plt_stored"),
  refreshToken: Redacted.make("plr_stored"),
  accessTokenExpiresAt: new Date(Date.now() + 3600_000),
  ...fields
})

/** An HttpClient that answers `{}` to everything and keeps the requests it was sent. */
const recordingClient = () => {
  const sent: Array<HttpClientRequest.HttpClientRequest> = []
  const client = HttpClient.make((request) => {
    sent.push(request)
    return Effect.succeed(HttpClientResponse.fromWeb(request, new Response("{}", { status: 200, headers: { "content-type": "application/json" } })))
  })
  return { sent, layer: Layer.succeed(HttpClient.HttpClient, client) }
}

/** Builds the service over a recording client and a memory store, makes one call, and says what was sent where. */
const probe = (options: PostlineOptions, stored?: StoredLogin) =>
  Effect.gen(function*() {
    const recording = recordingClient()
    const postline = yield* build(Postline.layer(options).pipe(
      Layer.provide(Layer.merge(recording.layer, TokenStore.layerMemory(stored)))
    ))
    yield* Effect.ignore(postline.client.organizations.listOrganizations({ urlParams: {} }))
    const [request] = recording.sent
    return {
      credentials: postline.credentials,
      baseUrl: postline.baseUrl,
      url: request!.url,
      authorization: request!.headers.authorization
    }
  })

const readStore = (xdg: string) =>
  TokenStore.pipe(Effect.flatMap((store) => store.load), Effect.provide(TokenStore.layerNode({ env: { XDG_CONFIG_HOME: xdg } })))

const writeStore = (xdg: string, login: StoredLogin) =>
  TokenStore.pipe(Effect.flatMap((store) => store.save(login)), Effect.provide(TokenStore.layerNode({ env: { XDG_CONFIG_HOME: xdg } })), Effect.orDie)

const secret = (value: Redacted.Redacted) => Redacted.value(value) as string

/**
 * A device login of a new user on `server`, approved through the device page a moment after the code is shown,
 * saved to the store under `xdg`.
 */
const loginThroughDevice = (server: ServerProcess, database: Record<string, string>, xdg: string) =>
  Effect.gen(function*() {
    const user = yield* userWithPassword(database)
    const codes: Array<typeof DeviceAuthorizationResponse.Type> = []
    const login = yield* deviceLogin({
      baseUrl: server.base,
      clientId: "postline-cli",
      onCode: (code) =>
        Effect.gen(function*() {
          codes.push(code)
          // Approved while the client polls: it has seen authorization_pending first.
          yield* Effect.forkDaemon(Effect.delay(
            Effect.flatMap(
              decideOnDevicePage(server.base, { email: user.email, password: user.password, userCode: code.user_code, action: "approve" }),
              (status) => Effect.sync(() => expect(status).toBe(200))
            ),
            "1200 millis"
          ))
        })
    }).pipe(Effect.provide(Layer.merge(NodeHttpClient.layer, TokenStore.layerNode({ env: { XDG_CONFIG_HOME: xdg } }))))
    return { user, login, code: codes[0]! }
  })

const unauthorizedWith = (base: string, token: string) =>
  Effect.promise(async () => (await fetch(`${base}/v1/organizations`, { headers: { authorization: `Bearer ${token}` } })).status)

describe("@postline/sdk", () => {
  describe("credentials", () => {
    it.scoped("come from the options, else the environment, else the token store; the bearer goes to the base URL", () =>
      Effect.gen(function*() {
        const env = { POSTLINE_URL: "http://env.example:4000/", POSTLINE_TOKEN: "plt_env", POSTLINE_API_KEY: "plk_env" }
        const stored = storedLogin()

        expect(yield* probe({ apiKey: "plk_option", token: Redacted.make("plt_option"), baseUrl: "http://option.example", env }, stored))
          .toEqual({
            credentials: "api-key",
            baseUrl: "http://option.example",
            url: "http://option.example/v1/organizations",
            authorization: "Bearer plk_option"
          })
        expect(yield* probe({ token: Redacted.make("plt_option"), env }, stored)).toMatchObject({
          credentials: "access-token",
          baseUrl: "http://env.example:4000",
          url: "http://env.example:4000/v1/organizations",
          authorization: "Bearer plt_option"
        })
        // From the environment, an API key before a token.
        expect(yield* probe({ env }, stored)).toMatchObject({ credentials: "api-key", authorization: "Bearer plk_env" })
        expect(yield* probe({ env: { ...env, POSTLINE_API_KEY: "" } }, stored)).toMatchObject({
          credentials: "access-token",
          authorization: "Bearer plt_env"
        })
        // Without a URL anywhere else, the stored login's server, even for a key from the environment.
        expect(yield* probe({ env: { POSTLINE_API_KEY: "plk_env" } }, stored)).toMatchObject({
          credentials: "api-key",
          baseUrl: "http://stored.example:3000"
        })
        expect(yield* probe({ env: { POSTLINE_API_KEY: "plk_env" } })).toMatchObject({ baseUrl: "http://localhost:3000" })
        expect(yield* probe({ env: {} }, stored)).toEqual({
          credentials: "login",
          baseUrl: "http://stored.example:3000",
          url: "http://stored.example:3000/v1/organizations",
          authorization: "Bearer plt_stored"
        })
      }))

    it.scoped("none anywhere is NotConfigured, which says what to set; a stored login of another server is not sent there", () =>
      Effect.gen(function*() {
        const recording = recordingClient()
        const failure = (options: PostlineOptions, stored?: StoredLogin) =>
          Effect.flip(build(Postline.layer(options).pipe(Layer.provide(Layer.merge(recording.layer, TokenStore.layerMemory(stored))))))

        const none = yield* failure({ env: {} })
        expect(none._tag).toBe("NotConfigured")
        expect(none.message).toContain("POSTLINE_API_KEY")
        expect(none.message).toContain("POSTLINE_TOKEN")
        expect(none.message).toContain("postline login")
        // Blank values count as none.
        expect((yield* failure({ apiKey: " ", env: { POSTLINE_TOKEN: "" } }))._tag).toBe("NotConfigured")

        const elsewhere = yield* failure({ env: { POSTLINE_URL: "http://other.example" } }, storedLogin())
        expect(elsewhere._tag).toBe("NotConfigured")
        expect(elsewhere.message).toContain("http://stored.example:3000")
        expect(recording.sent).toEqual([])
      }))
  })

  describe("the token store", () => {
    it.scoped("is $XDG_CONFIG_HOME/postline/credentials.json in a 0700 folder, 0600, replaced whole, and cleared", () =>
      Effect.gen(function*() {
        const xdg = yield* scopedTempDir("postline-sdk-xdg-")
        const store = yield* TokenStore.pipe(Effect.provide(TokenStore.layerNode({ env: { XDG_CONFIG_HOME: xdg, HOME: "/nonexistent" } })))
        const file = Path.join(xdg, "postline", "credentials.json")
        expect(store.path).toBe(file)
        expect(yield* store.load).toEqual(Option.none())

        const login = storedLogin({ accessTokenExpiresAt: new Date("2030-01-02T03:04:05.000Z") })
        yield* store.save(login)
        expect(statSync(Path.join(xdg, "postline")).mode & 0o777).toBe(0o700)
        expect(statSync(file).mode & 0o777).toBe(0o600)
        expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
          baseUrl: "http://stored.example:3000",
          clientId: "postline-cli",
          accessToken: "plt_stored",
          refreshToken: "plr_stored",
          accessTokenExpiresAt: "2030-01-02T03:04:05.000Z"
        })
        const loaded = Option.getOrThrow(yield* store.load)
        expect(Redacted.isRedacted(loaded.accessToken)).toBe(true)
        expect(String(loaded.refreshToken)).not.toContain("plr_stored")
        expect({ ...loaded, accessToken: secret(loaded.accessToken), refreshToken: secret(loaded.refreshToken) }).toEqual({
          ...login,
          accessToken: "plt_stored",
          refreshToken: "plr_stored"
        })

        // A folder made by someone else is made private; the new file replaces the old, no temporary file stays.
        chmodSync(Path.join(xdg, "postline"), 0o755)
        yield* store.save(storedLogin({ accessToken: Redacted.make("plt_next") }))
        expect(statSync(Path.join(xdg, "postline")).mode & 0o777).toBe(0o700)
        expect(readdirSync(Path.join(xdg, "postline"))).toEqual(["credentials.json"])
        expect(secret(Option.getOrThrow(yield* store.load).accessToken)).toBe("plt_next")

        yield* store.clear
        expect(yield* store.load).toEqual(Option.none())
        yield* store.clear
      }))

    it.scoped("is under $HOME/.config without XDG_CONFIG_HOME (or with a relative one); an unreadable file is no login", () =>
      Effect.gen(function*() {
        const home = yield* scopedTempDir("postline-sdk-home-")
        for (const env of [{ HOME: home }, { HOME: home, XDG_CONFIG_HOME: "relative/config" }]) {
          const store = yield* TokenStore.pipe(Effect.provide(TokenStore.layerNode({ env })))
          expect(store.path).toBe(Path.join(home, ".config", "postline", "credentials.json"))
        }
        mkdirSync(Path.join(home, ".config", "postline"), { recursive: true })
        writeFileSync(Path.join(home, ".config", "postline", "credentials.json"), "{ not json")
        const store = yield* TokenStore.pipe(Effect.provide(TokenStore.layerNode({ env: { HOME: home } })))
        expect(yield* store.load).toEqual(Option.none())
      }))
  })

  it("reads Retry-After as delay-seconds or an HTTP-date", () => {
    const now = Date.parse("2030-01-01T00:00:00Z")
    expect(parseRetryAfter("2", now)).toEqual(Option.some(Duration.seconds(2)))
    expect(parseRetryAfter(" 120 ", now)).toEqual(Option.some(Duration.seconds(120)))
    expect(parseRetryAfter("Tue, 01 Jan 2030 00:00:05 GMT", now)).toEqual(Option.some(Duration.millis(5000)))
    expect(parseRetryAfter("Mon, 31 Dec 2029 23:59:00 GMT", now)).toEqual(Option.some(Duration.millis(0)))
    expect(parseRetryAfter("soon", now)).toEqual(Option.none())
    expect(parseRetryAfter("", now)).toEqual(Option.none())
    expect(parseRetryAfter(undefined, now)).toEqual(Option.none())
  })

  describe("against a server", () => {
    it.scopedLive("device login: polls until approved, saves the login, and the stored login works; a denial is DeviceLoginFailed", () =>
      Effect.gen(function*() {
        const database = yield* freshDatabaseEnv
        const server = yield* startServer({ ...database, DEVICE_POLL_INTERVAL_SECONDS: "1" })
        const xdg = yield* scopedTempDir("postline-sdk-xdg-")
        const { code, login } = yield* loginThroughDevice(server, database, xdg)
        expect(code.interval).toBe(1)
        expect(code.verification_uri).toBe(`${server.base}/device`)
        expect(secret(login.accessToken)).toMatch(/^plt_/)
        expect(secret(login.refreshToken)).toMatch(/^plr_/)
        expect(login).toMatchObject({ baseUrl: server.base, clientId: "postline-cli" })
        expect(login.accessTokenExpiresAt.getTime()).toBeGreaterThan(Date.now() + 3500_000)
        const stored = Option.getOrThrow(yield* readStore(xdg))
        expect(secret(stored.refreshToken)).toBe(secret(login.refreshToken))

        // The environment names the server; the store has the login for it.
        const postline = yield* build(Postline.layerNode({ env: { XDG_CONFIG_HOME: xdg, POSTLINE_URL: `${server.base}/` } }))
        expect(postline.credentials).toBe("login")
        expect(postline.baseUrl).toBe(server.base)
        const organization = yield* postline.client.organizations.createOrganization({ payload: { name: "Logged in" } })
        const context = yield* postline.client.agent.getContext()
        expect(context.organizations.data.map((o) => o.id)).toEqual([organization.id])

        // Denied: DeviceLoginFailed, and the store keeps the login it had.
        const denier = yield* userWithPassword(database)
        const denied = yield* Effect.flip(deviceLogin({
          baseUrl: server.base,
          onCode: (code) =>
            Effect.asVoid(decideOnDevicePage(server.base, {
              email: denier.email,
              password: denier.password,
              userCode: code.user_code,
              action: "deny"
            }))
        }).pipe(Effect.provide(Layer.merge(NodeHttpClient.layer, TokenStore.layerNode({ env: { XDG_CONFIG_HOME: xdg } })))))
        expect(denied).toMatchObject({ _tag: "DeviceLoginFailed", error: "access_denied" })
        expect(secret(Option.getOrThrow(yield* readStore(xdg)).refreshToken)).toBe(secret(login.refreshToken))
      }), 120_000)

    it.scopedLive("refresh: an expired access token is refreshed once for concurrent calls, and after a 401; the store holds the rotated pair; a reused refresh token is LoginRequired", () =>
      Effect.gen(function*() {
        const database = yield* freshDatabaseEnv
        const server = yield* startServer({ ...database, DEVICE_POLL_INTERVAL_SECONDS: "1", ACCESS_TOKEN_LIFETIME_SECONDS: "2" })
        const xdg = yield* scopedTempDir("postline-sdk-xdg-")
        const env = { XDG_CONFIG_HOME: xdg }
        const { login } = yield* loginThroughDevice(server, database, xdg)
        const first = yield* build(Postline.layerNode({ env, refreshBefore: 0 }))
        yield* first.client.organizations.listOrganizations({ urlParams: {} })

        // Expired: concurrent calls wait for one refresh (two would present one refresh token twice and end the login).
        yield* Effect.sleep("2500 millis")
        expect(yield* unauthorizedWith(server.base, secret(login.accessToken))).toBe(401)
        const answers = yield* Effect.all(
          Array.from({ length: 5 }, () => first.client.organizations.listOrganizations({ urlParams: {} })),
          { concurrency: "unbounded" }
        )
        expect(answers).toHaveLength(5)
        const rotated = Option.getOrThrow(yield* readStore(xdg))
        expect(secret(rotated.accessToken)).not.toBe(secret(login.accessToken))
        expect(secret(rotated.refreshToken)).not.toBe(secret(login.refreshToken))
        expect(rotated.accessTokenExpiresAt.getTime()).toBeGreaterThan(Date.now())

        // The store says the token is good for an hour, the server says 401: refreshed once, and the call goes through.
        yield* Effect.sleep("2500 millis")
        yield* writeStore(xdg, { ...rotated, accessTokenExpiresAt: new Date(Date.now() + 3600_000) })
        const second = yield* build(Postline.layerNode({ env }))
        const organization = yield* second.client.organizations.createOrganization({ payload: { name: "After a 401" } })
        expect(organization.name).toBe("After a 401")
        const again = Option.getOrThrow(yield* readStore(xdg))
        expect(secret(again.refreshToken)).not.toBe(secret(rotated.refreshToken))

        // Someone presents a used refresh token (a stale copy of the store): the server ends the login.
        yield* writeStore(xdg, rotated)
        yield* Effect.sleep("2500 millis")
        const reused = yield* Effect.flip(build(Postline.layerNode({ env })))
        expect(reused._tag).toBe("LoginRequired")
        expect(reused.message).toContain("already used")
        expect(reused.message).toContain("postline login")
        // Nothing was cleared behind the user's back.
        expect(yield* readStore(xdg)).toEqual(Option.some(rotated))

        // The login is over for every holder: a client call answers Unauthorized that says to log in again.
        const ended = yield* Effect.flip(second.client.organizations.listOrganizations({ urlParams: {} }))
        expect(ended._tag).toBe("Unauthorized")
        expect(ended.message).toContain("postline login")
      }), 120_000)

    it.scopedLive("logout revokes the stored login at /v1/auth/revoke and clears the store", () =>
      Effect.gen(function*() {
        const database = yield* freshDatabaseEnv
        const server = yield* startServer({ ...database, DEVICE_POLL_INTERVAL_SECONDS: "1" })
        const xdg = yield* scopedTempDir("postline-sdk-xdg-")
        const { login } = yield* loginThroughDevice(server, database, xdg)
        const postline = yield* build(Postline.layerNode({ env: { XDG_CONFIG_HOME: xdg } }))
        yield* postline.client.organizations.listOrganizations({ urlParams: {} })
        expect(yield* unauthorizedWith(server.base, secret(login.accessToken))).toBe(200)

        yield* postline.logout
        expect(yield* readStore(xdg)).toEqual(Option.none())
        expect(yield* unauthorizedWith(server.base, secret(login.accessToken))).toBe(401)
        const after = yield* Effect.flip(postline.client.organizations.listOrganizations({ urlParams: {} }))
        expect(after._tag).toBe("Unauthorized")
        expect((yield* Effect.flip(build(Postline.layerNode({ env: { XDG_CONFIG_HOME: xdg } }))))._tag).toBe("NotConfigured")
      }), 120_000)

    it.scopedLive("retries: a publish is sent once under one Idempotency-Key through 503s, dropped answers, 429s and time-outs; unsafe requests are not repeated", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        const env = publishEnv(yield* freshDatabaseEnv, {})
        const setup = yield* publishingSetup(env, receiver.url, 1, 100)
        const server = yield* startServer(env)
        const proxy = yield* makeProxy(server.base)
        const postline = yield* build(withStore(
          { baseUrl: proxy.url, token: setup.token, env: {}, retry: { maxAttempts: 3, baseDelay: "50 millis" } },
          TokenStore.layerMemory()
        ))
        const teamId = Schema.decodeSync(TeamId)(setup.teamId)
        const accounts = [Schema.decodeSync(SocialAccountId)(setup.accountIds[0]!)]
        const draft = (content: string) =>
          Effect.map(postline.client.posts.createPost({ path: { teamId }, payload: { content } }), (post) => post.id)
        const deliveriesOf = (postId: string) =>
          receiver.received.filter((event: ReceivedEvent) => JSON.parse(event.body).data.postId === postId)
        const postNows = () => proxy.requests.filter((request) => request.path.endsWith("/post-now"))
        const keysSeen = () => postNows().map((request) => request.headers["idempotency-key"])

        // (a) 503 on the first try: the same request again, with the same key; published once.
        const failedFirst = yield* draft("Through a 503")
        proxy.setPlan((request, seen) => request.path.endsWith("/post-now") && seen.length === 0 ? answer(503) : forward)
        const a = yield* postline.postNow({ teamId, postId: failedFirst, payload: { socialAccountIds: accounts } })
        expect(a.response.outcome).toBe("none_failed")
        expect(a.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/)
        expect(keysSeen()).toEqual([a.idempotencyKey, a.idempotencyKey])
        expect(postNows().map((request) => request.server?.replayed)).toEqual([undefined, undefined])
        expect(deliveriesOf(failedFirst)).toHaveLength(1)

        // (b) Published, but the answer is lost: the retry is answered from the first, as a replay.
        const dropped = yield* draft("Answer dropped")
        proxy.setPlan((request, seen) => request.path.endsWith("/post-now") && seen.length === 0 ? drop : forward)
        const b = yield* postline.postNow({ teamId, postId: dropped, payload: { socialAccountIds: accounts } })
        expect(b.response.outcome).toBe("none_failed")
        expect(keysSeen()).toEqual([b.idempotencyKey, b.idempotencyKey])
        expect(postNows().map((request) => request.server)).toEqual([
          { status: 200, replayed: undefined },
          { status: 200, replayed: "true" }
        ])
        expect(deliveriesOf(dropped)).toHaveLength(1)

        // (c) 429 with Retry-After: 2: the next try comes no sooner.
        const limited = yield* draft("Rate limited")
        proxy.setPlan((request, seen) =>
          request.path.endsWith("/post-now") && seen.length === 0 ? answer(429, { "retry-after": "2" }) : forward
        )
        const c = yield* postline.postNow({ teamId, postId: limited, payload: { socialAccountIds: accounts }, idempotencyKey: "my-own-key" })
        expect(c.idempotencyKey).toBe("my-own-key")
        const [tooSoon, later] = postNows()
        expect(later!.at - tooSoon!.at).toBeGreaterThanOrEqual(2000)
        expect(keysSeen()).toEqual(["my-own-key", "my-own-key"])
        expect(deliveriesOf(limited)).toHaveLength(1)

        // (d) 503 every time: maxAttempts tries, then the 503 as the call's error; nothing published.
        const down = yield* draft("Never through")
        proxy.setPlan((request) => request.path.endsWith("/post-now") ? answer(503) : forward)
        const d = yield* Effect.flip(postline.postNow({ teamId, postId: down, payload: { socialAccountIds: accounts } }))
        expect(d._tag).not.toBe("RequestError")
        expect(postNows()).toHaveLength(3)
        expect(new Set(keysSeen()).size).toBe(1)
        expect(deliveriesOf(down)).toHaveLength(0)

        // A schedule goes the same way as a publish.
        const scheduled = yield* draft("Scheduled through a 502")
        proxy.setPlan((request, seen) => request.path.endsWith("/schedule") && seen.length === 0 ? answer(502) : forward)
        const at = new Date(Date.now() + 3600_000).toISOString()
        const s = yield* postline.schedulePost({ teamId, postId: scheduled, payload: { socialAccountIds: accounts, scheduledAt: at } })
        expect(s.response.outcome).toBe("none_failed")
        const schedules = proxy.requests.filter((request) => request.path.endsWith("/schedule"))
        expect(schedules.map((request) => request.headers["idempotency-key"])).toEqual([s.idempotencyKey, s.idempotencyKey])

        // A POST without a key is not repeated after a 503; a GET is.
        proxy.setPlan((request) => request.method === "POST" ? answer(503) : forward)
        const create = yield* Effect.flip(postline.client.posts.createPost({ path: { teamId }, payload: { content: "Not twice" } }))
        expect(create._tag).not.toBe("RequestError")
        expect(proxy.requests).toHaveLength(1)
        proxy.setPlan((request, seen) => request.method === "GET" && seen.length === 0 ? answer(503) : forward)
        const read = yield* postline.client.posts.getPost({ path: { teamId, postId: Schema.decodeSync(PostId)(down) } })
        expect(read.status).toBe("draft")
        expect(proxy.requests).toHaveLength(2)

        // A 429 that asks for a longer wait than the client takes is the call's answer at once.
        proxy.setPlan(() => answer(429, { "retry-after": "3600" }))
        const limitedForLong = yield* Effect.flip(postline.client.posts.getPost({ path: { teamId, postId: Schema.decodeSync(PostId)(down) } }))
        expect(limitedForLong._tag).toBe("TooManyRequests")
        expect(proxy.requests).toHaveLength(1)
        proxy.setPlan(() => forward)

        // A keyed publish whose try outlasts the timeout (the receiver takes 1.5 s, a try 1 s) is asked again with
        // its key: 409 while the first still runs, then the first's answer, replayed. Published once.
        const patient = yield* build(withStore(
          { baseUrl: proxy.url, apiKey: setup.token, env: {}, retry: { maxAttempts: 6, baseDelay: "400 millis", timeout: "1 second" } },
          TokenStore.layerMemory()
        ))
        receiver.answerWith((_event, response) => void setTimeout(() => response.writeHead(204).end(), 1500))
        const slow = yield* draft("Slower than a try")
        const timedOut = yield* patient.postNow({ teamId, postId: slow, payload: { socialAccountIds: accounts } })
        expect(timedOut.response.outcome).toBe("none_failed")
        expect(postNows().length).toBeGreaterThanOrEqual(2)
        expect(new Set(keysSeen())).toEqual(new Set([timedOut.idempotencyKey]))
        // On a busy machine a repeat may time out too: then the server answered it later, 409 or the replay.
        for (const repeat of postNows().slice(1, -1)) expect([409, 200]).toContain(repeat.server?.status)
        expect(postNows().at(-1)!.server).toEqual({ status: 200, replayed: "true" })
        expect(deliveriesOf(slow)).toHaveLength(1)
      }), 240_000)

  })
})
