import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { execFile } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { PGlite } from "@electric-sql/pglite"
import Pg from "pg"
import { lockDataDir } from "../src/Database/DataDirLock.js"
import { verifyPassword } from "../src/Users/Passwords.js"
import { freshDatabaseEnv, scopedTempDir, testDatabaseKind } from "./support/TestDatabase.js"

/** The stored hash, read straight from the database the admin command used. */
const passwordHashOf = async (env: Record<string, string>, email: string) => {
  const query = `SELECT password_hash FROM users WHERE email = '${email}'`
  if (env.DATABASE_URL) {
    const client = new Pg.Client({ connectionString: env.DATABASE_URL })
    await client.connect()
    try {
      return (await client.query(query)).rows[0]?.password_hash as string | undefined
    } finally {
      await client.end()
    }
  }
  const db = await PGlite.create(env.DATA_DIR!)
  try {
    return (await db.query<{ password_hash: string }>(query)).rows[0]?.password_hash
  } finally {
    await db.close()
  }
}

const serverDir = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")

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
      ["--import", "tsx", "src/admin.ts", ...args],
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
        expect(readFileSync(Path.join(dir, "postline.lock"), "utf8")).toBe(String(process.pid))
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
