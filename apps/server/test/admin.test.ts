import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { execFile } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { PGlite } from "@electric-sql/pglite"
import Pg from "pg"
import { lockDataDir, processStartTime } from "../src/Database/DataDirLock.js"
import { verifyPassword } from "../src/Users/Passwords.js"
import { freshDatabaseEnv, scopedTempDir, testDatabaseKind } from "./support/TestDatabase.js"
import { bundled, serverDir } from "./support/ServerProcess.js"

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

      const duplicate = yield* admin(["users", "create", "--email", "ALICE@example.com", "--name", "Alice 2"], env)
      expect(duplicate.code).not.toBe(0)
      expect(duplicate.stdout).toBe("")
      expect(duplicate.stderr).toContain("A user with email ALICE@example.com already exists")
    }), 60_000)

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
    }), 60_000)

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
    }), 120_000)

  it.scoped("explains its usage on a bad command or missing options", () =>
    Effect.gen(function*() {
      const env = yield* freshDatabaseEnv
      const unknown = yield* admin(["users", "delete"], env)
      expect(unknown.code).not.toBe(0)
      expect(unknown.stderr).toContain("Usage:")
      const missing = yield* admin(["users", "create", "--name", "Bob"], env)
      expect(missing.code).not.toBe(0)
      expect(missing.stderr).toContain("--email")
    }), 60_000)

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

        // An unexpected failure too: here a data folder that is a file.
        const file = Path.join(env.DATA_DIR!, "not-a-folder")
        writeFileSync(file, "")
        const failed = yield* admin(["users", "create", "--email", "erin@example.com", "--name", "Erin"], { DATA_DIR: file })
        expect(failed.code).toBe(1)
        expect(failed.stdout).toBe("")
        expect(failed.stderr).toMatch(/ERROR .*\n.*EEXIST/)
      }),
    60_000
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
      }),
    60_000
  )
})
