import { describe, expect, it } from "@effect/vitest"
import { Effect, Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { createServer } from "node:net"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { lockDataDir } from "../src/Database/DataDirLock.js"
import { freshDatabaseEnv, testDatabaseKind } from "./support/TestDatabase.js"

const serverDir = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")

const freePort = Effect.async<number>((resume) => {
  const probe = createServer().listen(0, "127.0.0.1", () => {
    const { port } = probe.address() as { port: number }
    probe.close(() => resume(Effect.succeed(port)))
  })
})


interface Started {
  readonly child: ChildProcess
  readonly lines: Array<string>
  readonly exited: Promise<number | null>
}

/** Starts the server as `pnpm start` runs it, and waits until it answers. */
const start = (env: Record<string, string> & { readonly PORT: string }) =>
  Effect.acquireRelease(
    Effect.promise(async (): Promise<Started> => {
      const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
        cwd: serverDir,
        env: { PATH: process.env.PATH ?? "", ...env }
      })
      const lines: Array<string> = []
      let exitCode: number | null | undefined
      const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(exitCode = code)))
      let buffered = ""
      child.stdout.on("data", (chunk: Buffer) => {
        const complete = (buffered + chunk.toString()).split("\n")
        buffered = complete.pop()!
        lines.push(...complete)
      })
      child.stderr.on("data", (chunk: Buffer) => lines.push(`stderr: ${chunk}`))
      for (;;) {
        if (exitCode !== undefined) throw new Error(`server exited with ${exitCode}:\n${lines.join("\n")}`)
        const up = await fetch(`http://127.0.0.1:${env.PORT}/health`).then((r) => r.ok, () => false)
        if (up) return { child, lines, exited }
        await new Promise((wait) => setTimeout(wait, 100))
      }
    }),
    ({ child }) => Effect.sync(() => child.kill("SIGKILL"))
  )

describe("the server process", () => {
  it.scopedLive("listens on PORT and HOST, logs JSON lines, answers, and stops cleanly on SIGTERM", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabaseEnv
      const port = yield* freePort
      const server = yield* start({ ...database, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "INFO" })
      const base = `http://127.0.0.1:${port}`

      const anonymous = yield* Effect.promise(() => fetch(`${base}/v1/organizations`))
      expect(anonymous.status).toBe(401)
      yield* Effect.sleep("100 millis")

      server.child.kill("SIGTERM")
      const code = yield* Effect.promise(() => server.exited)
      expect(code).toBe(0)
      if (database.DATA_DIR) expect(existsSync(Path.join(database.DATA_DIR, "postline.lock"))).toBe(false)

      const logs = server.lines.filter((line) => line.length > 0).map((line) => JSON.parse(line))
      expect(logs[0]).toMatchObject({ message: `Listening on http://127.0.0.1:${port}`, logLevel: "INFO" })
      expect(logs).toContainEqual(expect.objectContaining({
        message: "Sent HTTP response",
        annotations: expect.objectContaining({ "http.status": 401, "http.url": "/v1/organizations" })
      }))
    }), 60_000)

  it.scopedLive("logs no access lines above INFO", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabaseEnv
      const port = yield* freePort
      const server = yield* start({ ...database, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "WARN" })
      server.child.kill("SIGINT")
      expect(yield* Effect.promise(() => server.exited)).toBe(0)
      expect(server.lines.filter((line) => line.includes("Sent HTTP response"))).toEqual([])
    }), 60_000)

  it.scopedLive.skipIf(testDatabaseKind !== "embedded")(
    "exits with 1 and one clear log line when the data folder is held",
    () =>
      Effect.gen(function*() {
        const { DATA_DIR } = yield* freshDatabaseEnv
        const holder = yield* Scope.make()
        yield* lockDataDir(DATA_DIR!).pipe(Scope.extend(holder))
        const run = yield* Effect.promise(() =>
          new Promise<{ code: number | null; stdout: string }>((resolve) => {
            const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
              cwd: serverDir,
              env: { PATH: process.env.PATH ?? "", DATA_DIR: DATA_DIR!, PORT: "1" }
            })
            let stdout = ""
            child.stdout.on("data", (chunk: Buffer) => (stdout += chunk))
            child.once("exit", (code) => resolve({ code, stdout }))
          })
        )
        expect(run.code).toBe(1)
        const lines = run.stdout.trim().split("\n").map((line) => JSON.parse(line))
        expect(lines).toEqual([
          expect.objectContaining({
            message: "The server could not start",
            logLevel: "FATAL",
            cause: expect.stringContaining(`is in use by another Postline process (pid ${process.pid})`)
          })
        ])
      }),
    60_000
  )
})
