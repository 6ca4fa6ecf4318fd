import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { execFile } from "node:child_process"
import { randomBytes, randomUUID } from "node:crypto"
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { CredentialsCipher, unknownKeyMessage } from "../src/Secrets/CredentialsCipher.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import {
  bundled,
  callsAs,
  createUserWithToken,
  freePort,
  serverDir,
  type ServerProcess,
  spawnServer,
  startServer
} from "./support/ServerProcess.js"
import { freshDatabaseEnv, testDatabaseKind } from "./support/TestDatabase.js"

const newKey = () => randomBytes(32).toString("base64")

/** The id by which ciphertexts and messages name a key. */
const keyIdOf = (key: string) =>
  Effect.map(
    CredentialsCipher.pipe(Effect.provide(CredentialsCipher.Default({ current: Redacted.make(key), previous: [] }))),
    (cipher) => cipher.keyId
  )

/**
 * A server that should refuse to start: its exit code and its log lines, or "started" once it answers /health
 * (it is then killed), so that a start wrongly allowed fails the test at once rather than hanging it.
 */
const startOrRefusal = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const server = spawnServer({ HOST: "127.0.0.1", LOG_LEVEL: "WARN", ...env, PORT: String(port) })
    yield* Effect.addFinalizer(() => Effect.sync(() => server.child.kill("SIGKILL")))
    let exited = false
    const answers = async () => {
      while (!exited) {
        const up = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)
        if (up) return "started" as const
        await new Promise((wait) => setTimeout(wait, 100))
      }
      return "exited" as const
    }
    const code = yield* Effect.promise(() =>
      Promise.race([server.exited.then((code) => ((exited = true), code)), answers()])
    )
    return { code, lines: server.lines.filter((line) => line.length > 0) }
  })

/** Runs the admin command as `pnpm admin` does. */
const admin = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.async<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resume) => {
    execFile(
      process.execPath,
      [bundled("admin"), ...args],
      { cwd: serverDir, env: { PATH: process.env.PATH ?? "", ...env } },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error ? (error.code as number) ?? 1 : 0, stdout, stderr }))
    )
  })

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

/** A FATAL line as the server logs a setting that stops the start: its message alone, no cause. */
const fatalLine = {
  logLevel: "FATAL",
  message: expect.any(String),
  timestamp: expect.any(String),
  annotations: expect.any(Object),
  spans: expect.any(Object),
  fiberId: expect.any(String)
}

const credentialsKeyLogs = (lines: ReadonlyArray<string>) =>
  lines.filter((line) => line.includes("Generated a credentials key"))

describe("the credentials key", () => {
  it.scopedLive.skipIf(testDatabaseKind !== "postgres")(
    "with DATABASE_URL and no CREDENTIALS_KEY, the server refuses to start with one FATAL line",
    () =>
      Effect.gen(function*() {
        const { CREDENTIALS_KEY: _, ...withoutKey } = yield* freshDatabaseEnv
        const refused = yield* startOrRefusal(withoutKey)
        expect(refused.code).toBe(1)
        expect(refused.lines.map((line) => JSON.parse(line))).toEqual([{
          ...fatalLine,
          message: "CREDENTIALS_KEY is not set. With DATABASE_URL, set it to 32 random bytes in base64 (e.g. the output " +
            "of `openssl rand -base64 32`) and keep it safe: social account credentials are encrypted with it."
        }])
      })
  )

  it.scopedLive("a malformed key is refused in one FATAL line, as any other setting, without a stack or the key", () =>
    Effect.gen(function*() {
      const env = yield* freshDatabaseEnv
      const malformed = "s3cret-but-not-32-bytes"
      for (
        const [keys, message] of [
          [{ CREDENTIALS_KEY: malformed }, "CREDENTIALS_KEY must be 32 random bytes in base64, e.g. the output of `openssl rand -base64 32`"],
          [
            { CREDENTIALS_KEY: newKey(), CREDENTIALS_KEY_PREVIOUS: `${newKey()},${malformed}` },
            "Each key of CREDENTIALS_KEY_PREVIOUS must be 32 random bytes in base64, e.g. the output of `openssl rand -base64 32`"
          ]
        ] as const
      ) {
        const refused = yield* startOrRefusal({ ...env, ...keys })
        expect(refused.code).toBe(1)
        expect(refused.lines.map((line) => JSON.parse(line))).toEqual([{ ...fatalLine, message }])
        expect(refused.lines.join("\n")).not.toContain(malformed)
      }
    }))

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
      })
  )

  it.scopedLive(
    "a process with a key that cannot read the stored credentials refuses to start and changes nothing, until the key is declared lost; then new credentials or the key repair the accounts",
    () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const { env, start } = yield* setUp
        const { CREDENTIALS_KEY: _, ...database } = env
        const [keyA, keyB] = [newKey(), newKey()]
        const [idA, idB] = [yield* keyIdOf(keyA), yield* keyIdOf(keyB)]
        // Several processes share a PostgreSQL database; the embedded one is opened by one process at a time.
        const shared = testDatabaseKind === "postgres"

        const first = yield* start({ CREDENTIALS_KEY: keyA })
        const { ids: [repaired, keyGivenBack], teamPath } = yield* connectMastodon(first.call, mastodon, 2)
        if (!shared) yield* stop(first.server)

        // Another key, and the first one nowhere: one FATAL line that names the key the data uses and this
        // process's, and exit 1.
        const refused = yield* startOrRefusal({ ...database, CREDENTIALS_KEY: keyB })
        expect(refused.code, refused.lines.join("\n")).toBe(1)
        expect(refused.lines.map((line) => JSON.parse(line))).toEqual([{
          ...fatalLine,
          message: `Stored social account credentials were encrypted with key ${idA} (2 accounts), which this process ` +
            `does not have: it has ${idB} (current). Give it that key (CREDENTIALS_KEY, or in CREDENTIALS_KEY_PREVIOUS) ` +
            `as the other processes have it; if the key is lost, declare it so with ` +
            `\`pnpm admin credentials forget-key ${idA}\`, which marks its accounts reconnect_required`
        }])

        // It changed nothing: the process with the key (the same one, on PostgreSQL) reads both and publishes.
        const holder = shared ? first : yield* start({ CREDENTIALS_KEY: keyA })
        for (const id of [repaired, keyGivenBack]) {
          expect((yield* holder.call("GET", `${teamPath}/social-accounts/${id}`)).body).toMatchObject({ status: "connected", lastError: null })
        }
        expect(yield* publish(holder.call, teamPath, repaired, "Still published")).toMatchObject({ status: "published" })
        yield* stop(holder.server)

        // Declaring the key lost: not a key the command's own settings hold, nor one that no account uses.
        const forget = (keyId: string, key: string) => admin(["credentials", "forget-key", keyId], { ...database, CREDENTIALS_KEY: key })
        expect(yield* forget(idA, keyA)).toMatchObject({
          code: 1,
          stdout: "",
          stderr: expect.stringContaining(`Key ${idA} is one of this server's credentials keys: it is not lost`)
        })
        expect(yield* forget("Abcdefgh", keyB)).toMatchObject({
          code: 1,
          stdout: "",
          stderr: expect.stringContaining("No social account's credentials use key Abcdefgh")
        })
        expect((yield* forget("not a key id", keyB)).stderr).toContain("must be a key id")
        const forgotten = yield* forget(idA, keyB)
        expect(forgotten.code, forgotten.stderr).toBe(0)
        expect(JSON.parse(forgotten.stdout)).toEqual({ keyId: idA, marked: 2, accounts: 2 })

        // Then the process starts, and the accounts say they need reconnecting.
        const second = yield* start({ CREDENTIALS_KEY: keyB })
        const unreadable = { status: "reconnect_required", lastError: { category: "auth", message: unknownKeyMessage } }
        const listed = yield* second.call("GET", `${teamPath}/social-accounts`)
        expect(listed.body.data).toHaveLength(2)
        for (const account of listed.body.data) expect(account).toMatchObject(unreadable)
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
        expect(mastodon.statuses.map((status) => status.text)).toEqual(["Still published", "Reconnected", "Key given back"])
      })
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
        expect(lines).toEqual([{
          ...fatalLine,
          message: `${file} is missing, but the database beside it holds social accounts whose credentials were encrypted ` +
            "with it, and a new key could not read them. Restore credentials.key from a backup of the data folder, " +
            "or set CREDENTIALS_KEY to that key. If the key is lost, set CREDENTIALS_KEY to a new one " +
            "(`openssl rand -base64 32`): the server then names the lost key, to declare lost with " +
            "`pnpm admin credentials forget-key`, and its accounts need reconnecting (PATCH them with new credentials)"
        }])
        expect(existsSync(file)).toBe(false)

        // The key file restored as the message says: the account is as it was.
        writeFileSync(file, key, { mode: 0o600 })
        const restored = yield* start({})
        const after = yield* restored.call("GET", `${teamPath}/social-accounts/${account}`)
        expect(after.body).toMatchObject({ status: "connected", lastError: null })
      })
  )
})
