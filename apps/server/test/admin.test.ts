import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { lockDataDir } from "../src/Database/DataDirLock.js"
import { scopedPostgresDatabase, testDatabaseKind } from "./support/TestDatabase.js"

const serverDir = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs the admin command as `pnpm admin` does, against the given database settings. */
const admin = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.async<Run>((resume) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "src/admin.ts", ...args],
      { cwd: serverDir, env: { PATH: process.env.PATH ?? "", ...env } },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error ? (error.code as number) ?? 1 : 0, stdout, stderr }))
    )
  })

/** Database settings for a fresh database of this project's kind. */
const freshDatabase: Effect.Effect<Record<string, string>, never, Scope.Scope> = testDatabaseKind === "postgres"
  ? Effect.map(scopedPostgresDatabase, ({ url }) => ({ DATABASE_URL: url }))
  : Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(Path.join(tmpdir(), "postline-admin-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  ).pipe(Effect.map((dir) => ({ DATA_DIR: dir })))

describe("the data folder lock", () => {
  it.scoped("takes over a lock left by a dead process or by an earlier life of its own pid", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(Path.join(tmpdir(), "postline-lock-"))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
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
      const env = yield* freshDatabase
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

  it.scoped("explains its usage on a bad command or missing options", () =>
    Effect.gen(function*() {
      const env = yield* freshDatabase
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
        const env = yield* freshDatabase
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
