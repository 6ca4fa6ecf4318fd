import { describe, expect, it } from "@effect/vitest"
import { Effect, Scope } from "effect"
import { spawn } from "node:child_process"
import { existsSync } from "node:fs"
import * as Path from "node:path"
import { lockDataDir } from "../src/Database/DataDirLock.js"
import { bundled, freePort, serverDir, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, testDatabaseKind } from "./support/TestDatabase.js"

describe("the server process", () => {
  it.scopedLive("listens on PORT and HOST, logs JSON lines, answers, and stops cleanly on SIGTERM", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabaseEnv
      const server = yield* startServer({ ...database, LOG_LEVEL: "INFO" })
      const { base } = server
      const port = new URL(base).port

      const anonymous = yield* Effect.promise(() => fetch(`${base}/v1/organizations`))
      expect(anonymous.status).toBe(401)
      // The docs page is a chunk of the bundle of its own, loaded with the first request for it.
      const docs = yield* Effect.promise(() => fetch(`${base}/docs`))
      expect(docs.status).toBe(200)
      expect(yield* Effect.promise(() => docs.text())).toContain("<title>Postline</title>")
      yield* Effect.sleep("100 millis")

      server.child.kill("SIGTERM")
      const code = yield* Effect.promise(() => server.exited)
      expect(code).toBe(0)
      if (database.DATA_DIR) expect(existsSync(Path.join(database.DATA_DIR, "postline.lock"))).toBe(false)

      const logs = server.lines.filter((line) => line.length > 0).map((line) => JSON.parse(line))
      expect(logs).toContainEqual(expect.objectContaining({
        message: expect.stringMatching(new RegExp(`^Postline \\S+ is listening on http://127\\.0\\.0\\.1:${port}, with `)),
        logLevel: "INFO"
      }))
      // The bundle finds the template its build made, wherever its chunks sit.
      if (database.DATA_DIR) {
        expect(logs).toContainEqual(expect.objectContaining({
          message: `Made a new embedded database in ${Path.resolve(database.DATA_DIR)} from the build's template`
        }))
      }
      expect(logs).toContainEqual(expect.objectContaining({
        message: "Sent HTTP response",
        annotations: expect.objectContaining({ "http.status": 401, "http.url": "/v1/organizations" })
      }))
    }))

  it.scopedLive("logs no access lines above INFO", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabaseEnv
      const server = yield* startServer({ ...database })
      server.child.kill("SIGINT")
      expect(yield* Effect.promise(() => server.exited)).toBe(0)
      expect(server.lines.filter((line) => line.includes("Sent HTTP response"))).toEqual([])
    }))

  it.scopedLive.skipIf(testDatabaseKind !== "embedded")(
    "exits with 1 and one clear log line when the data folder is held",
    () =>
      Effect.gen(function*() {
        const { DATA_DIR } = yield* freshDatabaseEnv
        const holder = yield* Scope.make()
        yield* lockDataDir(DATA_DIR!).pipe(Scope.extend(holder))
        const port = yield* freePort
        const run = yield* Effect.promise(() =>
          new Promise<{ code: number | null; stdout: string }>((resolve) => {
            const child = spawn(process.execPath, [bundled("main")], {
              cwd: serverDir,
              env: { PATH: process.env.PATH ?? "", DATA_DIR: DATA_DIR!, PORT: String(port) }
            })
            let stdout = ""
            child.stdout.on("data", (chunk: Buffer) => (stdout += chunk))
            child.once("close", (code) => resolve({ code, stdout }))
          })
        )
        expect(run.code).toBe(1)
        const lines = run.stdout.trim().split("\n").map((line) => JSON.parse(line))
        expect(lines).toEqual([
          expect.objectContaining({
            message: expect.stringContaining(`is in use by another Postline process (pid ${process.pid})`),
            logLevel: "FATAL"
          })
        ])
      })
  )

  it.scopedLive.skipIf(testDatabaseKind !== "postgres")(
    "four processes started at once on a new database all start (they take turns making the schema)",
    () =>
      Effect.gen(function*() {
        const database = yield* freshDatabaseEnv
        const servers = yield* Effect.all(Array.from({ length: 4 }, () => startServer(database)), { concurrency: "unbounded" })
        for (const server of servers) {
          expect((yield* Effect.promise(() => fetch(`${server.base}/health`))).status).toBe(200)
        }
      })
  )
})
