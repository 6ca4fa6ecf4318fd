import { HttpClient, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { describe, expect, it, layer } from "@effect/vitest"
import { type DeviceAuthorizationResponse, PostId, replayedHeader, SocialAccountId, TeamId } from "@postline/domain"
import {
  deviceLogin,
  logout,
  parseRetryAfter,
  Postline,
  type PostlineOptions,
  type RetryOptions,
  type StoredLogin,
  TokenStore,
  withRetries
} from "@postline/sdk"
import { Context, Duration, Effect, Exit, Fiber, Layer, Option, Redacted, Schema, TestClock } from "effect"
import { spawnSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs"
import type { ServerResponse } from "node:http"
import { hostname } from "node:os"
import * as Path from "node:path"
import { makeWebhookReceiver, type ReceivedEvent } from "../support/Publishing.js"
import { publishEnv, publishingSetup } from "../support/ProcessPublishing.js"
import { answer, decideOnDevicePage, drop, forward, makeProxy, userWithPassword } from "../support/SdkServer.js"
import { type ServerProcess, startServer } from "../support/ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir } from "../support/TestDatabase.js"
import { eventually } from "../support/Waiting.js"

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

const jsonAnswer = (
  request: HttpClientRequest.HttpClientRequest,
  status: number,
  body: unknown,
  headers: Record<string, string> = {}
) =>
  HttpClientResponse.fromWeb(
    request,
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } })
  )

/** An HttpClient that answers each request with `respond`'s answer, after `respond`'s wait (on the Effect clock). */
const scriptedClient = (
  respond: (request: HttpClientRequest.HttpClientRequest, index: number) => {
    readonly after?: Duration.DurationInput
    readonly status: number
    readonly body: unknown
    readonly headers?: Record<string, string>
  }
) => {
  const sent: Array<HttpClientRequest.HttpClientRequest> = []
  const client = HttpClient.make((request) =>
    Effect.suspend(() => {
      const planned = respond(request, sent.push(request) - 1)
      return Effect.as(Effect.sleep(planned.after ?? 0), jsonAnswer(request, planned.status, planned.body, planned.headers))
    })
  )
  return { sent, client, layer: Layer.succeed(HttpClient.HttpClient, client) }
}

/** The server's answer to a key whose first request still runs (apps/server/src/Idempotency/Service.ts). */
const stillRunning = {
  _tag: "Conflict",
  reason: "idempotency_key_in_progress",
  message: "A request with this Idempotency-Key is still being processed: retry it later for its answer"
}

/** The same answer from a server older than reasons: its message alone says so. */
const { reason: _reason, ...stillRunningBeforeReasons } = stillRunning

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

/** A server on a database of its own, for the tests of a `layer`. */
class SharedServer extends Context.Tag("SharedServer")<
  SharedServer,
  { readonly server: ServerProcess; readonly database: Record<string, string> }
>() {}

const sharedServer = (env: Record<string, string>) =>
  Layer.scoped(
    SharedServer,
    Effect.gen(function*() {
      const database = yield* freshDatabaseEnv
      return { database, server: yield* startServer({ ...database, ...env }) }
    })
  )

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

    it.scoped("at a path given, leaves the file's folder as it is, and needs it to exist", () =>
      Effect.gen(function*() {
        const folder = yield* scopedTempDir("postline-sdk-given-")
        chmodSync(folder, 0o755)
        const file = Path.join(folder, "creds.json")
        const store = yield* TokenStore.pipe(Effect.provide(TokenStore.layerNode({ path: file, env: { XDG_CONFIG_HOME: folder } })))
        expect(store.path).toBe(file)
        yield* store.save(storedLogin())
        yield* store.withLock(store.save(storedLogin({ accessToken: Redacted.make("plt_locked") })))
        expect(statSync(folder).mode & 0o777).toBe(0o755)
        expect(statSync(file).mode & 0o777).toBe(0o600)
        expect(readdirSync(folder)).toEqual(["creds.json"])
        expect(secret(Option.getOrThrow(yield* store.load).accessToken)).toBe("plt_locked")

        const missing = Path.join(folder, "missing", "creds.json")
        const nowhere = yield* TokenStore.pipe(Effect.provide(TokenStore.layerNode({ path: missing })))
        const failed = yield* Effect.flip(nowhere.save(storedLogin()))
        expect(failed).toMatchObject({ _tag: "SystemError", reason: "NotFound" })
        expect(existsSync(Path.dirname(missing))).toBe(false)
      }))
  })

  describe("the token store's lock", () => {
    const storeAt = (file: string) => TokenStore.pipe(Effect.provide(TokenStore.layerNode({ path: file })))
    const lockHeldBy = (lock: string, pid: number) =>
      writeFileSync(lock, JSON.stringify({ pid, hostname: hostname(), token: "someone-else" }), { mode: 0o600 })

    it.scopedLive("runs one holder at a time across stores of one file, waits for a live lock, takes over a dead or untouched one", () =>
      Effect.gen(function*() {
        const folder = yield* scopedTempDir("postline-sdk-lock-")
        const file = Path.join(folder, "credentials.json")
        const lock = `${file}.lock`
        const [first, second] = [yield* storeAt(file), yield* storeAt(file)]

        // Two stores of one file (as two processes have): their holders never overlap.
        const log: Array<string> = []
        const holder = (store: TokenStore, name: string) =>
          store.withLock(Effect.gen(function*() {
            log.push(`${name} in`)
            expect(existsSync(lock)).toBe(true)
            yield* Effect.sleep("150 millis")
            log.push(`${name} out`)
          }))
        yield* Effect.all([holder(first, "a"), holder(second, "b"), holder(first, "c"), holder(second, "d")], {
          concurrency: "unbounded"
        })
        expect(log).toHaveLength(8)
        for (let i = 0; i < 8; i += 2) expect(log[i + 1]).toBe(log[i]!.replace(" in", " out"))
        expect(existsSync(lock)).toBe(false)

        // A lock of a live process, touched just now: waited for until it is gone.
        lockHeldBy(lock, process.pid)
        let ran = false
        const waiting = yield* Effect.fork(first.withLock(Effect.sync(() => (ran = true))))
        yield* Effect.sleep("400 millis")
        expect(ran).toBe(false)
        rmSync(lock)
        yield* Fiber.join(waiting)
        expect(ran).toBe(true)
        expect(existsSync(lock)).toBe(false)

        // A lock whose process has ended, or that nobody has touched for a minute: stale, taken over at once.
        const ended = spawnSync(process.execPath, ["-e", ""]).pid
        lockHeldBy(lock, ended)
        expect(yield* first.withLock(Effect.succeed("dead holder")).pipe(Effect.timeout("60 seconds"))).toBe("dead holder")
        lockHeldBy(lock, process.pid)
        const minuteAgo = new Date(Date.now() - 60_000)
        utimesSync(lock, minuteAgo, minuteAgo)
        expect(yield* first.withLock(Effect.succeed("hung holder")).pipe(Effect.timeout("60 seconds"))).toBe("hung holder")
        expect(existsSync(lock)).toBe(false)
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

  describe("timeouts, in doubt and deadlines (on the test clock)", () => {
    it.scoped("a try is given `timeout`, a keyed one `keyedTimeout`, one that carries a file `uploadTimeout`", () =>
      Effect.gen(function*() {
        const slow = scriptedClient(() => ({ after: "90 seconds", status: 200, body: {} }))
        const retrying = withRetries({ timeout: "30 seconds", maxAttempts: 1 })(slow.client)
        const form = new FormData()
        form.append("file", new Blob([new Uint8Array(16)]), "tiny.png")
        const outcomes = yield* Effect.all([
          HttpClientRequest.post("http://fake/v1/teams/t/posts").pipe(HttpClientRequest.bodyUnsafeJson({ content: "x" })),
          HttpClientRequest.post("http://fake/v1/teams/t/posts/p/post-now").pipe(HttpClientRequest.setHeader("idempotency-key", "k")),
          HttpClientRequest.post("http://fake/v1/teams/t/assets").pipe(HttpClientRequest.bodyFormData(form)),
          HttpClientRequest.put("http://fake/v1/uploads/u").pipe(HttpClientRequest.bodyUint8Array(new Uint8Array(2 * 1024 * 1024))),
          HttpClientRequest.put("http://fake/v1/uploads/u").pipe(HttpClientRequest.bodyUint8Array(new Uint8Array(1024)))
        ].map((request) => Effect.fork(Effect.exit(Effect.map(retrying.execute(request), (response) => response.status)))))
        yield* TestClock.adjust("91 seconds")
        const exits = yield* Effect.all(outcomes.map(Fiber.join))
        expect(exits.map((exit) => Exit.isSuccess(exit) ? exit.value : Exit.isFailure(exit) ? "failed" : "?")).toEqual([
          "failed",
          200,
          200,
          200,
          "failed"
        ])
        expect(String(Exit.isFailure(exits[0]!) && exits[0].cause)).toContain("no answer within 30s")

        // An upload through the client is such a form: its slow answer is waited for.
        const slowUpload = scriptedClient(() => ({
          after: "90 seconds",
          status: 415,
          body: { _tag: "UnsupportedMediaType", message: "Not an image" }
        }))
        const postline = yield* build(Postline.layer({ baseUrl: "http://fake", token: "plt_fake", env: {}, retry: { timeout: "30 seconds" } }).pipe(
          Layer.provide(Layer.merge(slowUpload.layer, TokenStore.layerMemory()))
        ))
        const upload = yield* Effect.fork(Effect.flip(postline.client.assetUploads.uploadAsset({
          path: { teamId: Schema.decodeSync(TeamId)("00000000-0000-4000-8000-000000000001") },
          payload: form
        })))
        yield* TestClock.adjust("91 seconds")
        expect((yield* Fiber.join(upload))._tag).toBe("UnsupportedMediaType")
        expect(slowUpload.sent).toHaveLength(1)
      }))

    it.scoped("a keyed request still running on the server is asked again, beyond maxAttempts, until its answer or `inDoubtFor`; then PublishInDoubt", () =>
      Effect.gen(function*() {
        const teamId = Schema.decodeSync(TeamId)("00000000-0000-4000-8000-000000000001")
        const postId = Schema.decodeSync(PostId)("00000000-0000-4000-8000-000000000002")
        const payload = { socialAccountIds: [Schema.decodeSync(SocialAccountId)("00000000-0000-4000-8000-000000000003")] }
        const serviceOver = (server: ReturnType<typeof scriptedClient>, retry: RetryOptions) =>
          build(Postline.layer({ baseUrl: "http://fake", token: "plt_fake", env: {}, retry }).pipe(
            Layer.provide(Layer.merge(server.layer, TokenStore.layerMemory()))
          ))
        const retry = { maxAttempts: 2, inDoubtFor: "2 minutes", baseDelay: "1 second", maxDelay: "10 seconds" } as const

        // Ten 409s (more than maxAttempts; from a server older than reasons after the first five), then the first
        // request's answer: the call has it.
        const answer = { postId, results: [], outcome: "none_failed" }
        const finishing = scriptedClient((_request, index) =>
          index < 10
            ? { status: 409, body: index < 5 ? stillRunning : stillRunningBeforeReasons }
            : { status: 200, body: answer, headers: { [replayedHeader]: "true" } }
        )
        const patient = yield* serviceOver(finishing, retry)
        const done = yield* Effect.fork(patient.postNow({ teamId, postId, payload, idempotencyKey: "key-1" }))
        yield* TestClock.adjust("2 minutes")
        expect((yield* Fiber.join(done)).response.outcome).toBe("none_failed")
        expect(finishing.sent).toHaveLength(11)
        expect(new Set(finishing.sent.map((request) => request.headers["idempotency-key"]))).toEqual(new Set(["key-1"]))

        // Still running after inDoubtFor: PublishInDoubt, with the key to repeat.
        const running = scriptedClient(() => ({ status: 409, body: stillRunning }))
        const waiting = yield* serviceOver(running, retry)
        const inDoubt = yield* Effect.fork(Effect.flip(waiting.postNow({ teamId, postId, payload, idempotencyKey: "key-2" })))
        yield* TestClock.adjust("119 seconds")
        expect(yield* Fiber.poll(inDoubt)).toEqual(Option.none())
        yield* TestClock.adjust("2 seconds")
        const failure = yield* Fiber.join(inDoubt)
        expect(failure._tag).toBe("PublishInDoubt")
        expect(failure).toMatchObject({ idempotencyKey: "key-2" })
        expect(failure.message).toContain("may still complete")
        expect(failure.message).toContain("key-2")
        expect(running.sent.length).toBeGreaterThan(10)
        const schedule = yield* Effect.fork(Effect.flip(waiting.schedulePost({
          teamId,
          postId,
          payload: { ...payload, slot: "next" },
          idempotencyKey: "key-3"
        })))
        yield* TestClock.adjust("121 seconds")
        expect(yield* Fiber.join(schedule)).toMatchObject({ _tag: "PublishInDoubt", idempotencyKey: "key-3" })

        // A 409 that is the first request's own answer (replayed, or another conflict) is answered at once.
        for (const conflict of [
          { status: 409, body: stillRunning, headers: { [replayedHeader]: "true" } },
          { status: 409, body: { _tag: "Conflict", message: "The post has been published already" } }
        ]) {
          const final = scriptedClient(() => conflict)
          const service = yield* serviceOver(final, retry)
          expect((yield* Effect.flip(service.postNow({ teamId, postId, payload })))._tag).toBe("Conflict")
          expect(final.sent).toHaveLength(1)
        }
      }))

    it.effect("device login: stops on its own once the code's expires_in has passed, as DeviceLoginFailed expired_token", () =>
      Effect.gen(function*() {
        const server = scriptedClient((request) =>
          request.url.endsWith("/v1/auth/device/code")
            ? {
              status: 200,
              body: {
                device_code: "pld_fake",
                user_code: "ABCD-EFGH",
                verification_uri: "http://fake/device",
                verification_uri_complete: "http://fake/device?user_code=ABCD-EFGH",
                expires_in: 32,
                interval: 5
              }
            }
            // A server that never says expired_token.
            : {
              status: 400,
              body: {
                _tag: "OAuthError",
                error: "authorization_pending",
                error_description: "Not approved yet",
                message: "Not approved yet"
              }
            }
        )
        const login = yield* Effect.fork(Effect.flip(deviceLogin({ baseUrl: "http://fake", onCode: () => Effect.void }).pipe(
          Effect.provide(Layer.merge(server.layer, TokenStore.layerMemory()))
        )))
        yield* TestClock.adjust("31 seconds")
        expect(yield* Fiber.poll(login)).toEqual(Option.none())
        yield* TestClock.adjust("2 seconds")
        const failure = yield* Fiber.join(login)
        expect(failure).toMatchObject({ _tag: "DeviceLoginFailed", error: "expired_token" })
        // Polled every 5 seconds until then: at 5, 10, …, 30.
        expect(server.sent.filter((request) => request.url.endsWith("/v1/auth/token"))).toHaveLength(6)
      }))
  })

  // Each of these logs a new user of its own in: one server (and database) serves every test of a token lifetime.
  layer(sharedServer({ DEVICE_POLL_INTERVAL_SECONDS: "1" }), { excludeTestServices: true })("against a server", (it) => {
    it.scoped("device login: polls until approved, saves the login, and the stored login works; a denial is DeviceLoginFailed", () =>
      Effect.gen(function*() {
        const { database, server } = yield* SharedServer
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
      }))

    it.scoped("logout revokes the stored login at /v1/auth/revoke and clears the store", () =>
      Effect.gen(function*() {
        const { database, server } = yield* SharedServer
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
      }))
  })

  layer(sharedServer({ DEVICE_POLL_INTERVAL_SECONDS: "1", ACCESS_TOKEN_LIFETIME_SECONDS: "2" }), { excludeTestServices: true })(
    "against a server whose access tokens last 2 s",
    (it) => {
      it.scoped("refresh: an expired access token is refreshed once for concurrent calls, and after a 401; the store holds the rotated pair; a reused refresh token is LoginRequired", () =>
        Effect.gen(function*() {
          const { database, server } = yield* SharedServer
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
        }))

      it.scoped("two services sharing the store refresh a due login one at a time: all go on, the login stays, the store holds its newest pair", () =>
        Effect.gen(function*() {
          const { database, server } = yield* SharedServer
          const xdg = yield* scopedTempDir("postline-sdk-xdg-")
          const env = { XDG_CONFIG_HOME: xdg }
          const { login } = yield* loginThroughDevice(server, database, xdg)
          yield* Effect.sleep("2500 millis")

          // Each its own store and lock on one file, as separate processes have: each finds the login due at once.
          const services = yield* Effect.all(
            Array.from({ length: 3 }, () => build(Postline.layerNode({ env, refreshBefore: 0 }))),
            { concurrency: "unbounded" }
          )
          const organizations = yield* Effect.all(
            services.map((postline) => postline.client.organizations.listOrganizations({ urlParams: {} })),
            { concurrency: "unbounded" }
          )
          expect(organizations).toHaveLength(3)
          const stored = Option.getOrThrow(yield* readStore(xdg))
          expect(secret(stored.refreshToken)).not.toBe(secret(login.refreshToken))
          expect(existsSync(Path.join(xdg, "postline", "credentials.json.lock"))).toBe(false)

          // The stored pair is the login's newest: once due, its refresh token is taken, and the login goes on.
          yield* Effect.sleep("2500 millis")
          const later = yield* build(Postline.layerNode({ env, refreshBefore: 0 }))
          const organization = yield* later.client.organizations.createOrganization({ payload: { name: "Still logged in" } })
          expect(organization.name).toBe("Still logged in")
          expect(secret(Option.getOrThrow(yield* readStore(xdg)).refreshToken)).not.toBe(secret(stored.refreshToken))
        }))

      it.scoped("logout() needs no service: a due login is revoked and cleared, one the server has ended is cleared, none is nothing to do", () =>
        Effect.gen(function*() {
          const { database, server } = yield* SharedServer
          const xdg = yield* scopedTempDir("postline-sdk-xdg-")
          const env = { XDG_CONFIG_HOME: xdg }
          const logoutHere = logout().pipe(Effect.provide(Layer.merge(NodeHttpClient.layer, TokenStore.layerNode({ env }))))
          const { login } = yield* loginThroughDevice(server, database, xdg)
          yield* Effect.sleep("2500 millis")

          yield* logoutHere
          expect(yield* readStore(xdg)).toEqual(Option.none())
          // Its refresh token no longer refreshes: the login has ended on the server.
          yield* writeStore(xdg, login)
          const ended = yield* Effect.flip(build(Postline.layerNode({ env })))
          expect(ended._tag).toBe("LoginRequired")
          expect(ended.message).toContain("Unknown or revoked refresh token")

          // The ended login is still in the store: logging out clears it.
          yield* logoutHere
          expect(yield* readStore(xdg)).toEqual(Option.none())
          yield* logoutHere
          expect(readdirSync(Path.join(xdg, "postline"))).toEqual([])
        }))
    }
  )

  describe("against a server, publishing", () => {
    it.scopedLive("retries: a publish is sent once under one Idempotency-Key through 503s, dropped answers and 429s; unsafe requests are not repeated", () =>
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
        // The last answer: a status the endpoint does not declare, which the client has no error to decode into.
        expect(d).toMatchObject({ _tag: "ResponseError", reason: "Decode", response: { status: 503 } })
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
        expect(create).toMatchObject({ _tag: "ResponseError", reason: "Decode", response: { status: 503 } })
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
      }))

    it.scopedLive("a slow publish: a keyed try waits `keyedTimeout`; a publish still running is asked again beyond maxAttempts for `inDoubtFor`, then PublishInDoubt, and the same key later has its answer", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        // A held send stays a send in progress, on a busy machine too.
        const env = publishEnv(yield* freshDatabaseEnv, { PUBLISH_TIMEOUT_SECONDS: "300", PUBLISH_RECOVERY_SECONDS: "600" })
        const setup = yield* publishingSetup(env, receiver.url, 1, 100)
        const server = yield* startServer(env)
        const proxy = yield* makeProxy(server.base)
        const service = (retry: RetryOptions) =>
          build(withStore({ baseUrl: proxy.url, apiKey: setup.token, env: {}, retry }, TokenStore.layerMemory()))
        const teamId = Schema.decodeSync(TeamId)(setup.teamId)
        const accounts = [Schema.decodeSync(SocialAccountId)(setup.accountIds[0]!)]
        // Drafts are made with the default timeouts: only the publishes' timeouts are under test.
        const drafting = yield* service({})
        const draft = (content: string) =>
          Effect.map(drafting.client.posts.createPost({ path: { teamId }, payload: { content } }), (post) => post.id)
        const deliveriesOf = (postId: string) =>
          receiver.received.filter((event: ReceivedEvent) => JSON.parse(event.body).data.postId === postId)
        const postNows = () => proxy.requests.filter((request) => request.path.endsWith("/post-now"))
        const stillRunning = () => postNows().filter((request) => request.server?.status === 409).length
        const slowReceiver = (millis: number) =>
          receiver.answerWith((_event, response) => void setTimeout(() => response.writeHead(204).end(), millis))
        // The receiver answers when the test says: the publish runs until then, however fast or slow the machine is.
        const heldReceiver = () => {
          const held: Array<ServerResponse> = []
          receiver.answerWith((_event, response) => void held.push(response))
          return () => held.splice(0).forEach((response) => response.writeHead(204).end())
        }

        // Slower than `timeout`, not than `keyedTimeout`: one try, answered.
        const patient = yield* service({ timeout: "1 second", keyedTimeout: "60 seconds" })
        slowReceiver(2500)
        const once = yield* draft("Slower than a plain try")
        proxy.setPlan(() => forward)
        const first = yield* patient.postNow({ teamId, postId: once, payload: { socialAccountIds: accounts } })
        expect(first.response.outcome).toBe("none_failed")
        expect(postNows().map((request) => request.server)).toEqual([{ status: 200, replayed: undefined }])
        expect(deliveriesOf(once)).toHaveLength(1)

        // The try times out; the server says 409 "still being processed" more often than maxAttempts; then the
        // first's answer, replayed. Published once.
        const running = yield* draft("Running for a while")
        const releaseRunning = heldReceiver()
        proxy.setPlan(() => forward)
        const waiting = yield* service({
          keyedTimeout: "1 second",
          maxAttempts: 3,
          baseDelay: "100 millis",
          maxDelay: "300 millis",
          inDoubtFor: "600 seconds"
        })
        const asking = yield* Effect.fork(waiting.postNow({ teamId, postId: running, payload: { socialAccountIds: accounts } }))
        yield* eventually(Effect.sync(stillRunning), (answers) => answers > 3)
        releaseRunning()
        const second = yield* Fiber.join(asking)
        expect(second.response.outcome).toBe("none_failed")
        expect(stillRunning()).toBeGreaterThan(3)
        expect(new Set(postNows().map((request) => request.headers["idempotency-key"]))).toEqual(new Set([second.idempotencyKey]))
        expect(postNows().at(-1)!.server).toEqual({ status: 200, replayed: "true" })
        expect(deliveriesOf(running)).toHaveLength(1)

        // Still running when `inDoubtFor` has passed: PublishInDoubt, naming the key.
        const doubtful = yield* draft("In doubt")
        const releaseDoubtful = heldReceiver()
        proxy.setPlan(() => forward)
        const hasty = yield* service({
          keyedTimeout: "1 second",
          maxAttempts: 3,
          baseDelay: "100 millis",
          maxDelay: "300 millis",
          inDoubtFor: "1 second"
        })
        const failure = yield* Effect.flip(hasty.postNow({
          teamId,
          postId: doubtful,
          payload: { socialAccountIds: accounts },
          idempotencyKey: "in-doubt-key"
        }))
        expect(failure).toMatchObject({ _tag: "PublishInDoubt", idempotencyKey: "in-doubt-key" })
        expect(failure.message).toContain("in-doubt-key")
        expect(postNows().some((request) => request.server?.status === 409)).toBe(true)
        releaseDoubtful()
        // The same request with the same key, later: the publish's answer, and nothing published twice.
        const repeated = yield* waiting.postNow({
          teamId,
          postId: doubtful,
          payload: { socialAccountIds: accounts },
          idempotencyKey: "in-doubt-key"
        })
        expect(repeated.response.outcome).toBe("none_failed")
        expect(postNows().at(-1)!.server).toEqual({ status: 200, replayed: "true" })
        expect(deliveriesOf(doubtful)).toHaveLength(1)
      }))
  })
})
