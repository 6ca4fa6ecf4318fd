import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes, randomUUID } from "node:crypto"
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { unknownKeyMessage } from "../src/Providers/CredentialsCipher.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import {
  callsAs,
  createUserWithToken,
  freePort,
  type ServerProcess,
  spawnServer,
  startServer
} from "./support/ServerProcess.js"
import { freshDatabaseEnv, testDatabaseKind } from "./support/TestDatabase.js"

const newKey = () => randomBytes(32).toString("base64")

/** Stops a server as its operator would, and waits until it has. */
const stop = (server: ServerProcess) =>
  Effect.promise(() => {
    server.child.kill("SIGTERM")
    return server.exited
  })

/**
 * A database of this project's kind with a user, and how to start the server on it: allowed to reach the
 * Mastodon fake on this machine, publishing for free.
 */
const setUp = Effect.gen(function*() {
  const env: Record<string, string> = {
    ...(yield* freshDatabaseEnv),
    OUTBOUND_ALLOW_PRIVATE: "true",
    CREDIT_COSTS: JSON.stringify({ mastodon: 0 })
  }
  const user = yield* createUserWithToken(env)
  const start = (keys: Record<string, string>) => {
    const { CREDENTIALS_KEY: _, ...withoutKey } = env
    return Effect.map(startServer({ ...withoutKey, ...keys }), (server) => ({ server, call: callsAs(server, user.token) }))
  }
  return { env, start }
})

/** A team of a new organization, and a Mastodon account of it: its id and the team's path. */
const connectMastodon = (
  call: ReturnType<typeof callsAs>,
  mastodon: { readonly url: string; readonly token: string },
  accounts = 1
) =>
  Effect.gen(function*() {
    const organization = yield* call("POST", "/v1/organizations", { name: "Acme" })
    const team = yield* call("POST", "/v1/teams", { organizationId: organization.body.id, name: "Social" })
    const teamPath = `/v1/teams/${team.body.id}`
    const ids: Array<string> = []
    for (let index = 0; index < accounts; index++) {
      const connected = yield* call("POST", `${teamPath}/social-accounts`, {
        provider: "mastodon",
        instanceUrl: mastodon.url,
        accessToken: mastodon.token
      })
      expect(connected.status, JSON.stringify(connected.body)).toBe(201)
      ids.push(connected.body.id)
    }
    return { teamPath, ids }
  })

/** Publishes a new post to one account; answers its result. */
const publish = (call: ReturnType<typeof callsAs>, teamPath: string, accountId: string, content: string) =>
  Effect.gen(function*() {
    const post = yield* call("POST", `${teamPath}/posts`, { content })
    const sent = yield* call("POST", `${teamPath}/posts/${post.body.id}/post-now`, { socialAccountIds: [accountId] }, {
      "idempotency-key": randomUUID()
    })
    return sent.body.results?.[0]
  })

const credentialsKeyLogs = (lines: ReadonlyArray<string>) =>
  lines.filter((line) => line.includes("Generated a credentials key"))

describe("the credentials key", () => {
  it.scopedLive.skipIf(testDatabaseKind !== "postgres")(
    "with DATABASE_URL and no CREDENTIALS_KEY, the server refuses to start with one FATAL line",
    () =>
      Effect.gen(function*() {
        const { CREDENTIALS_KEY: _, ...withoutKey } = yield* freshDatabaseEnv
        const server = spawnServer({ ...withoutKey, PORT: String(yield* freePort) })
        expect(yield* Effect.promise(() => server.exited)).toBe(1)
        const lines = server.lines.filter((line) => line.length > 0).map((line) => JSON.parse(line))
        expect(lines).toEqual([
          expect.objectContaining({ logLevel: "FATAL", message: "The server could not start", cause: expect.stringContaining("CREDENTIALS_KEY is not set") })
        ])
      }),
    60_000
  )

  it.scopedLive.skipIf(testDatabaseKind !== "embedded")(
    "with the embedded database and no key, one is made in the data folder (mode 0600) and said once",
    () =>
      Effect.gen(function*() {
        const env = yield* freshDatabaseEnv
        const first = yield* startServer({ ...env, LOG_LEVEL: "WARN" })
        const file = Path.join(env.DATA_DIR!, "credentials.key")
        expect(statSync(file).mode & 0o777).toBe(0o600)
        expect(credentialsKeyLogs(first.lines)).toHaveLength(1)
        first.child.kill("SIGTERM")
        yield* Effect.promise(() => first.exited)
        const again = yield* startServer({ ...env, LOG_LEVEL: "WARN" })
        expect(credentialsKeyLogs(again.lines)).toEqual([])
      }),
    60_000
  )

  it.scopedLive(
    "with a key that cannot read the stored credentials, accounts say so from the start; new credentials or the key repair them",
    () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const { start } = yield* setUp
        const [keyA, keyB] = [newKey(), newKey()]

        const first = yield* start({ CREDENTIALS_KEY: keyA })
        const { ids: [repaired, keyGivenBack], teamPath } = yield* connectMastodon(first.call, mastodon, 2)
        yield* stop(first.server)

        // Another key, and the old one nowhere: the accounts need reconnecting, and the log says why.
        const second = yield* start({ CREDENTIALS_KEY: keyB })
        const unreadable = { status: "reconnect_required", lastError: { category: "auth", message: unknownKeyMessage } }
        const listed = yield* second.call("GET", `${teamPath}/social-accounts`)
        expect(listed.body.data).toHaveLength(2)
        for (const account of listed.body.data) expect(account).toMatchObject(unreadable)
        const warnings = second.server.lines.filter((line) => line.includes("social account(s) have credentials encrypted with key"))
        expect(warnings.map((line) => JSON.parse(line))).toEqual([
          expect.objectContaining({ logLevel: "WARN", message: expect.stringMatching(/^2 social account\(s\) .* neither CREDENTIALS_KEY nor in CREDENTIALS_KEY_PREVIOUS/) })
        ])
        const verified = yield* second.call("POST", `${teamPath}/social-accounts/${repaired}/verify`)
        expect(verified.status).toBe(200)
        expect(verified.body).toMatchObject(unreadable)
        const patched = yield* second.call("PATCH", `${teamPath}/social-accounts/${repaired}`, {
          provider: "mastodon",
          instanceUrl: mastodon.url,
          accessToken: mastodon.token
        })
        expect(patched).toMatchObject({ status: 200, body: { status: "connected", lastError: null } })
        expect(yield* publish(second.call, teamPath, repaired, "Reconnected")).toMatchObject({ status: "published" })
        yield* stop(second.server)

        // The old key given back as a previous one: the account it reads is connected again, and publishes.
        const third = yield* start({ CREDENTIALS_KEY: keyB, CREDENTIALS_KEY_PREVIOUS: keyA })
        const back = yield* third.call("GET", `${teamPath}/social-accounts/${keyGivenBack}`)
        expect(back.body).toMatchObject({ status: "connected", lastError: null })
        expect(yield* publish(third.call, teamPath, keyGivenBack, "Key given back")).toMatchObject({ status: "published" })
        expect(mastodon.statuses.map((status) => status.text)).toEqual(["Reconnected", "Key given back"])
      }),
    120_000
  )

  it.scopedLive.skipIf(testDatabaseKind !== "embedded")(
    "with the embedded database, a data folder that holds accounts but lost its key file refuses to start, and makes no key",
    () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const { env, start } = yield* setUp
        const first = yield* start({})
        const { ids: [account], teamPath } = yield* connectMastodon(first.call, mastodon)
        yield* stop(first.server)

        const file = Path.join(env.DATA_DIR!, "credentials.key")
        const key = readFileSync(file, "utf8")
        rmSync(file)
        const refused = spawnServer({ ...env, PORT: String(yield* freePort) })
        yield* Effect.addFinalizer(() => Effect.sync(() => refused.child.kill("SIGKILL")))
        expect(yield* Effect.promise(() => refused.exited)).toBe(1)
        const lines = refused.lines.filter((line) => line.length > 0).map((line) => JSON.parse(line))
        expect(lines).toEqual([expect.objectContaining({
          logLevel: "FATAL",
          message: "The server could not start",
          cause: expect.stringContaining(
            `${file} is missing, but the database beside it holds social accounts whose credentials were encrypted ` +
              "with it, and a new key could not read them. Restore credentials.key from a backup of the data folder, " +
              "or set CREDENTIALS_KEY to that key."
          )
        })])
        expect(existsSync(file)).toBe(false)

        // The key file restored as the message says: the account is as it was.
        writeFileSync(file, key, { mode: 0o600 })
        const restored = yield* start({})
        const after = yield* restored.call("GET", `${teamPath}/social-accounts/${account}`)
        expect(after.body).toMatchObject({ status: "connected", lastError: null })
      }),
    60_000
  )
})
