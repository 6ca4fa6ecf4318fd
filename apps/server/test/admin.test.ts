import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Redacted, Scope } from "effect"
import { execFile } from "node:child_process"
import { randomBytes, randomUUID } from "node:crypto"
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { PGlite } from "@electric-sql/pglite"
import Pg from "pg"
import { lockDataDir, processStartTime } from "../src/Database/DataDirLock.js"
import { CredentialsCipher, unknownKeyMessage } from "../src/Secrets/CredentialsCipher.js"
import { rotationBatchSize } from "../src/SocialAccounts/CredentialsRotation.js"
import { verifyPassword } from "../src/Users/Passwords.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { freshDatabaseEnv, scopedTempDir, testDatabaseKind } from "./support/TestDatabase.js"
import {
  bundled,
  callsAs,
  createUserWithToken,
  serverDir,
  type ServerProcess,
  startServer
} from "./support/ServerProcess.js"

/** A query straight on the database the admin command used. */
const queryOn = async (env: Record<string, string>, query: string, params: Array<unknown> = []) => {
  if (env.DATABASE_URL) {
    const client = new Pg.Client({ connectionString: env.DATABASE_URL })
    await client.connect()
    try {
      return (await client.query(query, params)).rows
    } finally {
      await client.end()
    }
  }
  const db = await PGlite.create(env.DATA_DIR!)
  try {
    return (await db.query<Record<string, unknown>>(query, params)).rows
  } finally {
    await db.close()
  }
}

/** The stored hash, read straight from the database the admin command used. */
const passwordHashOf = async (env: Record<string, string>, email: string) =>
  (await queryOn(env, "SELECT password_hash FROM users WHERE email = $1", [email]))[0]?.password_hash as string | undefined


interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs the admin command as `pnpm admin` does, against the given database settings. */
const admin = (args: ReadonlyArray<string>, env: Record<string, string>, input = "") =>
  Effect.async<Run>((resume) => {
    const child = execFile(
      process.execPath,
      [bundled("admin"), ...args],
      { cwd: serverDir, env: { PATH: process.env.PATH ?? "", ...env } },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error ? (error.code as number) ?? 1 : 0, stdout, stderr }))
    )
    child.stdin?.end(input)
  })


describe("the data folder lock", () => {
  it.scoped("takes over a lock left by a dead process or by an earlier life of its own pid", () =>
    Effect.gen(function*() {
      const dir = yield* scopedTempDir("postline-lock-")
      for (const stale of [String(process.pid), "999999999", "garbage"]) {
        writeFileSync(Path.join(dir, "postline.lock"), stale)
        const scope = yield* Scope.make()
        yield* lockDataDir(dir).pipe(Scope.extend(scope))
        expect(readFileSync(Path.join(dir, "postline.lock"), "utf8")).toBe(`${process.pid} ${processStartTime(process.pid)}`)
        yield* Scope.close(scope, Exit.void)
        expect(existsSync(Path.join(dir, "postline.lock"))).toBe(false)
      }
    }))
})

describe("pnpm admin", () => {
  it.scoped("creates a user and prints only {id, email, token} as JSON; a duplicate email fails", () =>
    Effect.gen(function*() {
      const env = yield* freshDatabaseEnv
      const created = yield* admin(["users", "create", "--email", "alice@example.com", "--name", "Alice"], env)
      expect(created.code, created.stderr).toBe(0)
      const output = JSON.parse(created.stdout)
      expect(Object.keys(output).sort()).toEqual(["email", "id", "token"])
      expect(output.email).toBe("alice@example.com")
      expect(output.token).toMatch(/^plt_[A-Za-z0-9_-]{43}$/)
      expect(created.stdout.trim().split("\n")).toHaveLength(1)
      // Which database it used, on standard error: a shell without the server's DATABASE_URL shows at once.
      expect(created.stderr.split("\n")[0]).toBe(
        env.DATABASE_URL
          ? `Using the PostgreSQL database "${new URL(env.DATABASE_URL).pathname.slice(1)}" on 127.0.0.1:5432`
          : `Using the embedded database in ${Path.resolve(env.DATA_DIR!)} (DATABASE_URL is not set)`
      )
      if (env.DATABASE_URL) {
        // The URL's password is never said.
        const url = new URL(env.DATABASE_URL)
        url.password = "s3cret-pw"
        const listed = yield* admin(["users", "list"], { ...env, DATABASE_URL: url.toString() })
        expect(listed.code, listed.stderr).toBe(0)
        expect(listed.stderr).toMatch(/^Using the PostgreSQL database "postline_test_\w+" on 127\.0\.0\.1:5432\n/)
        expect(listed.stderr).not.toContain("s3cret-pw")
      }

      const duplicate = yield* admin(["users", "create", "--email", "ALICE@example.com", "--name", "Alice 2"], env)
      expect(duplicate.code).not.toBe(0)
      expect(duplicate.stdout).toBe("")
      expect(duplicate.stderr).toContain("A user with email ALICE@example.com already exists")
    }))

  it.scoped("sets a password from standard input, stored only as a salted scrypt hash", () =>
    Effect.gen(function*() {
      const env = yield* freshDatabaseEnv
      const created = yield* admin(["users", "create", "--email", "carol@example.com", "--name", "Carol"], env)
      expect(created.code, created.stderr).toBe(0)
      const set = yield* admin(["users", "set-password", "--email", "Carol@example.com"], env, "correct horse\n")
      expect(set.code, set.stderr).toBe(0)
      expect(set.stdout).toBe("")

      const short = yield* admin(["users", "set-password", "--email", "carol@example.com"], env, "short\n")
      expect(short.code).not.toBe(0)
      expect(short.stderr).toContain("at least 8 characters")
      const unknown = yield* admin(["users", "set-password", "--email", "nobody@example.com"], env, "long enough\n")
      expect(unknown.code).not.toBe(0)
      expect(unknown.stderr).toContain("No user with email nobody@example.com")

      const stored = yield* Effect.promise(() => passwordHashOf(env, "carol@example.com"))
      expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{86}$/)
      expect(stored).not.toContain("correct horse")
      expect(yield* Effect.promise(() => verifyPassword("correct horse", stored!))).toBe(true)
      expect(yield* Effect.promise(() => verifyPassword("correct horse\n", stored!))).toBe(false)
      expect(yield* Effect.promise(() => verifyPassword("wrong horse", stored!))).toBe(false)
    }))

  it.scoped("grants credits to an organization and prints its balance as JSON; refuses what is not a grant", () =>
    Effect.gen(function*() {
      const env = yield* freshDatabaseEnv
      expect((yield* admin(["users", "create", "--email", "ops@example.com", "--name", "Ops"], env)).code).toBe(0)
      const [{ id }] = yield* Effect.promise(() => queryOn(env, "INSERT INTO organizations (name) VALUES ('Acme') RETURNING id"))
      const grant = (...args: Array<string>) => admin(["credits", "grant", "--organization", String(id), ...args], env)
      const first = yield* grant("--amount", "25", "--note", "Welcome credits")
      expect(first.code).toBe(0)
      expect(JSON.parse(first.stdout)).toEqual({ organizationId: id, balance: 25, reserved: 0, available: 25 })
      expect(JSON.parse((yield* grant("--amount", "5")).stdout)).toMatchObject({ balance: 30 })
      const ledger = yield* Effect.promise(() =>
        queryOn(env, "SELECT kind, amount::int, balance_after::int AS after, note FROM credit_transactions ORDER BY balance_after")
      )
      expect(ledger).toEqual([
        { kind: "grant", amount: 25, after: 25, note: "Welcome credits" },
        { kind: "grant", amount: 5, after: 30, note: null }
      ])
      for (const args of [["--amount", "0"], ["--amount=-1.5"]]) {
        const refused = yield* grant(...args)
        expect(refused.code, args.join(" ")).toBe(1)
        expect(refused.stderr).toMatch(/--amount must be a whole number of credits/)
      }
      const unknown = yield* admin(["credits", "grant", "--organization", "00000000-0000-0000-0000-000000000000", "--amount", "1"], env)
      expect(unknown).toMatchObject({ code: 1, stderr: expect.stringContaining("Organization 00000000-0000-0000-0000-000000000000 not found") })
      expect((yield* admin(["credits", "grant", "--organization", "acme", "--amount", "1"], env)).stderr).toMatch(/UUID/)
    }))

  it.scoped("explains its usage on a bad command or missing options, and its help, without opening a database", () =>
    Effect.gen(function*() {
      // A data folder that does not exist: a command that opened the database would refuse it.
      const dataDir = Path.join(yield* scopedTempDir("postline-admin-usage-"), "data")
      const env = { DATA_DIR: dataDir }
      const unknown = yield* admin(["users", "delete"], env)
      expect(unknown.code).not.toBe(0)
      expect(unknown.stderr).toContain("Invalid subcommand")
      const missing = yield* admin(["users", "create", "--name", "Bob"], env)
      expect(missing.code).not.toBe(0)
      expect(missing.stderr).toContain("--email")
      const invalid = yield* admin(["users", "create", "--email", "bob", "--name", "Bob"], env)
      expect(invalid).toMatchObject({ code: 1, stdout: "", stderr: expect.stringContaining("--email must be an email address") })

      // --help of the whole, and of one command, on standard output.
      const help = yield* admin(["--help"], env)
      expect(help.code).toBe(0)
      for (const command of ["users create", "users list", "users token", "users set-password", "organizations list", "credits grant", "credentials rotate", "credentials forget-key"]) {
        expect(help.stdout).toContain(command)
      }
      const tokenHelp = yield* admin(["users", "token", "--help"], env)
      expect(tokenHelp.code).toBe(0)
      expect(tokenHelp.stdout).toContain("--email")
      expect(tokenHelp.stdout).toContain("Creates another personal access token")
      for (const run of [unknown, missing, invalid, help, tokenHelp]) expect(run.stderr).not.toContain("Using ")
      expect(existsSync(dataDir)).toBe(false)
    }))

  it.scoped.skipIf(testDatabaseKind !== "embedded")(
    "logs on standard error: standard output is the JSON alone, when it remakes an interrupted data folder too",
    () =>
      Effect.gen(function*() {
        const env = yield* freshDatabaseEnv
        // A database cut short while it was being made: its marker, and a half-written file.
        writeFileSync(Path.join(env.DATA_DIR!, "postline.creating"), "")
        writeFileSync(Path.join(env.DATA_DIR!, "PG_VERSION"), "1")
        const created = yield* admin(["users", "create", "--email", "dana@example.com", "--name", "Dana"], env)
        expect(created.code, created.stderr).toBe(0)
        expect(JSON.parse(created.stdout)).toMatchObject({ email: "dana@example.com" })
        expect(created.stdout.trim().split("\n")).toHaveLength(1)
        expect(created.stderr).toMatch(/WARN .*was being created when the server stopped, and is incomplete/)

        // A failure too: here a data folder that is a file.
        const file = Path.join(env.DATA_DIR!, "not-a-folder")
        writeFileSync(file, "")
        const failed = yield* admin(["users", "create", "--email", "erin@example.com", "--name", "Erin"], { DATA_DIR: file })
        expect(failed.code).toBe(1)
        expect(failed.stdout).toBe("")
        expect(failed.stderr).toContain(`DATA_DIR ${file} is not a writable folder`)
      })
  )

  it.scoped.skipIf(testDatabaseKind !== "embedded")(
    "refuses a data folder that does not exist, rather than making an empty installation beside the server's",
    () =>
      Effect.gen(function*() {
        const env = yield* freshDatabaseEnv
        const elsewhere = Path.join(env.DATA_DIR!, "not-here")
        const refused = yield* admin(["users", "create", "--email", "bob@example.com", "--name", "Bob"], { DATA_DIR: elsewhere })
        expect(refused).toMatchObject({ code: 1, stdout: "" })
        expect(refused.stderr).toContain(`There is no data folder at ${elsewhere}`)
        expect(existsSync(elsewhere)).toBe(false)
      })
  )

  it.scoped.skipIf(testDatabaseKind !== "embedded")(
    "refuses while another process holds the embedded data folder",
    () =>
      Effect.gen(function*() {
        const env = yield* freshDatabaseEnv
        const holder = yield* Scope.make()
        yield* lockDataDir(env.DATA_DIR!).pipe(Scope.extend(holder))
        const refused = yield* admin(["users", "create", "--email", "bob@example.com", "--name", "Bob"], env)
        expect(refused.code).not.toBe(0)
        expect(refused.stdout).toBe("")
        expect(refused.stderr).toContain("is in use by another Postline process")
        yield* Scope.close(holder, Exit.void)
        const accepted = yield* admin(["users", "create", "--email", "bob@example.com", "--name", "Bob"], env)
        expect(accepted.code, accepted.stderr).toBe(0)
      })
  )

  it.scopedLive(
    "credentials rotate re-encrypts every account's credentials with CREDENTIALS_KEY, in batches, so that the previous key can be dropped",
    () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const [keyA, keyB, keyC] = [randomBytes(32), randomBytes(32), randomBytes(32)].map((key) => key.toString("base64"))
        const { CREDENTIALS_KEY: _, ...database } = yield* freshDatabaseEnv
        const env = { ...database, OUTBOUND_ALLOW_PRIVATE: "true", CREDIT_COSTS: JSON.stringify({ mastodon: 0 }) }
        const withKeys = (current: string, previous?: string) => ({
          ...env,
          CREDENTIALS_KEY: current,
          ...(previous === undefined ? {} : { CREDENTIALS_KEY_PREVIOUS: previous })
        })
        const cipherOf = (key: string) =>
          CredentialsCipher.pipe(Effect.provide(CredentialsCipher.Default({ current: Redacted.make(key), previous: [] })))
        const stop = (server: ServerProcess) =>
          Effect.promise(() => (server.child.kill("SIGTERM"), server.exited))
        const user = yield* createUserWithToken(env)

        // Under key A: two accounts.
        const first = yield* startServer(withKeys(keyA))
        const callFirst = callsAs(first, user.token)
        const organization = yield* callFirst("POST", "/v1/organizations", { name: "Acme" })
        const team = yield* callFirst("POST", "/v1/teams", { organizationId: organization.body.id, name: "Social" })
        const accounts = `/v1/teams/${team.body.id}/social-accounts`
        const credentials = { provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token }
        const [patched, rotated] = [(yield* callFirst("POST", accounts, credentials)).body.id, (yield* callFirst("POST", accounts, credentials)).body.id]
        yield* stop(first)

        // More accounts under A than a batch holds, and one under a key that no server has.
        const [{ credentials: stored }] = yield* Effect.promise(() =>
          queryOn(env, "SELECT credentials FROM social_accounts WHERE id = $1", [rotated])
        )
        const plaintext = yield* (yield* cipherOf(keyA)).decrypt(stored)
        const many = 2 * rotationBatchSize + 50
        const underA = yield* Effect.forEach(Array.from({ length: many }), () => Effect.flatMap(cipherOf(keyA), (cipher) => cipher.encrypt(plaintext)))
        const underC = yield* (yield* cipherOf(keyC)).encrypt(plaintext)
        const [{ id: lost }] = yield* Effect.promise(() =>
          queryOn(
            env,
            `INSERT INTO social_accounts (team_id, provider, handle, credentials, content_limits)
              SELECT a.team_id, a.provider, a.handle, c.credentials, a.content_limits
              FROM social_accounts a, unnest($2::text[]) WITH ORDINALITY AS c (credentials, n)
              WHERE a.id = $1 ORDER BY c.n RETURNING id`,
            [rotated, [underC, ...underA]]
          )
        )

        // A rotation by settings without key C would mark its account for every process: refused, nothing changed.
        const refusedRotation = yield* admin(["credentials", "rotate"], withKeys(keyB, keyA))
        expect(refusedRotation).toMatchObject({ code: 1, stdout: "" })
        expect(refusedRotation.stderr).toContain(`encrypted with key ${(yield* cipherOf(keyC)).keyId} (1 account), which this process does not have`)
        const statuses = yield* Effect.promise(() => queryOn(env, "SELECT DISTINCT status FROM social_accounts"))
        expect(statuses).toEqual([{ status: "connected" }])

        // No process has key C: the operator says so, or no server without it would start.
        const keyIdC = (yield* cipherOf(keyC)).keyId
        const forgotten = yield* admin(["credentials", "forget-key", keyIdC], withKeys(keyB, keyA))
        expect(forgotten.code, forgotten.stderr).toBe(0)
        expect(JSON.parse(forgotten.stdout)).toEqual({ keyId: keyIdC, marked: 1, accounts: 1 })

        // B is the key now, A a previous one: a change of credentials is written under B.
        const second = yield* startServer(withKeys(keyB, keyA))
        const repaired = yield* callsAs(second, user.token)("PATCH", `${accounts}/${patched}`, credentials)
        expect(repaired.status, JSON.stringify(repaired.body)).toBe(200)
        yield* stop(second)

        const rotate = admin(["credentials", "rotate"], withKeys(keyB, keyA))
        const done = yield* rotate
        expect(done.code, done.stderr).toBe(0)
        expect(JSON.parse(done.stdout)).toEqual({ reencrypted: many + 1, alreadyCurrent: 1, unreadable: 1 })
        expect(JSON.parse((yield* rotate).stdout)).toEqual({ reencrypted: 0, alreadyCurrent: many + 2, unreadable: 1 })
        const keyIdB = (yield* cipherOf(keyB)).keyId
        const byKey = yield* Effect.promise(() =>
          queryOn(env, "SELECT split_part(credentials, '.', 2) AS key, count(*)::int AS n FROM social_accounts GROUP BY 1 ORDER BY 2")
        )
        expect(byKey).toEqual([{ key: keyIdC, n: 1 }, { key: keyIdB, n: many + 2 }])

        // A dropped: every account still checks and publishes, but the one no key could read.
        const third = yield* startServer(withKeys(keyB))
        const callThird = callsAs(third, user.token)
        for (const id of [patched, rotated]) {
          expect((yield* callThird("POST", `${accounts}/${id}/verify`)).body).toMatchObject({ status: "connected", lastError: null })
        }
        const post = yield* callThird("POST", `/v1/teams/${team.body.id}/posts`, { content: "After the rotation" })
        const sent = yield* callThird("POST", `/v1/teams/${team.body.id}/posts/${post.body.id}/post-now`, {
          socialAccountIds: [rotated]
        }, { "idempotency-key": randomUUID() })
        expect(sent.body.results).toMatchObject([{ socialAccountId: rotated, status: "published" }])
        const listed = (yield* callThird("GET", `${accounts}?status=reconnect_required`)).body.data
        expect(listed).toMatchObject([{ id: lost, lastError: { category: "auth", message: unknownKeyMessage } }])
        expect(third.lines.filter((line) => line.includes("have credentials encrypted with key"))).toEqual([])
      })
  )

  it.scopedLive(
    "works while the server runs (the embedded database through the server's admin socket), which tells an empty installation how to begin",
    () =>
      Effect.gen(function*() {
        const env = yield* freshDatabaseEnv
        const stop = (server: ServerProcess) => Effect.promise(() => (server.child.kill("SIGTERM"), server.exited))
        const server = yield* startServer({ ...env, LOG_LEVEL: "INFO" })
        const hint = server.lines.find((line) => line.includes("No user yet"))
        expect(hint).toContain("pnpm admin users create --email you@example.com --name You")
        expect(hint).toContain(`curl -H \\"Authorization: Bearer <token>\\" ${server.base}/v1/organizations`)
        // Where to run the command (else it uses another database), and that the CLI's login needs a password.
        expect(hint).toContain(
          env.DATABASE_URL
            ? "in a shell with this server's DATABASE_URL and CREDENTIALS_KEY: pnpm admin users create"
            : `in a shell without DATABASE_URL, with DATA_DIR=${Path.resolve(env.DATA_DIR!)} or in this folder: pnpm admin users create`
        )
        expect(hint).toContain(
          "for `postline login` (the CLI), give the user a password too: pnpm admin users set-password --email you@example.com"
        )
        if (testDatabaseKind === "embedded") {
          // The socket's folder is the server's user's alone.
          expect(statSync(Path.join(env.DATA_DIR!, "admin")).mode & 0o777).toBe(0o700)
          expect(statSync(Path.join(env.DATA_DIR!, "admin", "postline.sock")).isSocket()).toBe(true)
        }

        const created = yield* admin(["users", "create", "--email", "op@example.com", "--name", "Op"], env)
        expect(created.code, created.stderr).toBe(0)
        const { id, token } = JSON.parse(created.stdout)
        if (testDatabaseKind === "embedded") {
          expect(created.stderr.split("\n")[0]).toBe(
            `Using the embedded database in ${Path.resolve(env.DATA_DIR!)}, through the server running on it (DATABASE_URL is not set)`
          )
        }
        const organization = yield* callsAs(server, token)("POST", "/v1/organizations", { name: "Acme" })
        expect(organization.status).toBe(201)

        const users = yield* admin(["users", "list"], env)
        expect(users.code, users.stderr).toBe(0)
        expect(JSON.parse(users.stdout)).toEqual([
          { id, email: "op@example.com", name: "Op", createdAt: expect.any(String), hasPassword: false, organizations: 1 }
        ])
        const granted = yield* admin(["credits", "grant", "--organization", organization.body.id, "--amount", "7"], env)
        expect(JSON.parse(granted.stdout)).toMatchObject({ balance: 7 })
        const organizations = yield* admin(["organizations", "list", "--limit", "5"], env)
        expect(JSON.parse(organizations.stdout)).toEqual([
          { id: organization.body.id, name: "Acme", createdAt: organization.body.createdAt, members: 1, teams: 0, creditsAvailable: 7 }
        ])

        // Another token for the same user: both work.
        const issued = yield* admin(["users", "token", "--email", "OP@example.com"], env)
        expect(issued.code, issued.stderr).toBe(0)
        const second = JSON.parse(issued.stdout)
        expect(second).toEqual({ id, email: "op@example.com", token: expect.stringMatching(/^plt_/) })
        expect(second.token).not.toBe(token)
        for (const bearer of [token, second.token]) {
          expect((yield* callsAs(server, bearer)("GET", "/v1/organizations")).body.total).toBe(1)
        }
        expect(yield* admin(["users", "token", "--email", "nobody@example.com"], env)).toMatchObject({
          code: 1,
          stdout: "",
          stderr: expect.stringContaining("No user with email nobody@example.com")
        })

        // The admin API is the socket's alone: the public port knows none of its routes.
        for (const [method, path] of [["GET", "/users?limit=1"], ["POST", "/users/token"], ["GET", "/organizations?limit=1"]]) {
          const answer = yield* callsAs(server, token)(method!, path!, method === "POST" ? { email: "op@example.com" } : undefined)
          expect(answer.status, `${method} ${path}`).toBe(404)
        }

        // With a user, a start says nothing of the first one.
        yield* stop(server)
        if (testDatabaseKind === "embedded") expect(existsSync(Path.join(env.DATA_DIR!, "admin", "postline.sock"))).toBe(false)
        const again = yield* startServer({ ...env, LOG_LEVEL: "INFO" })
        expect(again.lines.some((line) => line.includes("No user yet"))).toBe(false)
      })
  )
})
