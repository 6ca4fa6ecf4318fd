import { describe, expect, it } from "@effect/vitest"
import { PGlite } from "@electric-sql/pglite"
import { Effect } from "effect"
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { migrations } from "../src/Database/Migrations.js"
import { freePort, spawnServer, startServer } from "./support/ServerProcess.js"
import { scopedTempDir, testDatabaseKind } from "./support/TestDatabase.js"

const logLines = (lines: ReadonlyArray<string>) =>
  lines.filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>)

const remadeWarning = (dataDir: string) =>
  `The database in ${dataDir} was being created when the server stopped, and is incomplete: ` +
  "nothing was stored in it yet, so it is made again"

/**
 * Kills a server `afterMs` after it began to make its new data folder; says whether the
 * creation was cut short (it may have ended first).
 */
const killWhileCreating = (dataDir: string, afterMs: number) =>
  Effect.gen(function*() {
    const server = spawnServer({ DATA_DIR: dataDir, PORT: String(yield* freePort), HOST: "127.0.0.1" })
    const marker = Path.join(dataDir, "postline.creating")
    yield* Effect.promise(async () => {
      while (!existsSync(marker)) await new Promise((wait) => setTimeout(wait, 10))
    })
    yield* Effect.sleep(afterMs)
    server.child.kill("SIGKILL")
    yield* Effect.promise(() => server.exited)
    return existsSync(marker)
  })

// Only the embedded database has a data folder.
describe.skipIf(testDatabaseKind !== "embedded")("a new embedded data folder", () => {
  it.scopedLive("killed at any moment of its creation, is made again at the next start and then serves", () =>
    Effect.gen(function*() {
      const cutShort: Array<number> = []
      for (const afterMs of [0, 500, 1500]) {
        const dataDir = yield* scopedTempDir("postline-create-")
        const interrupted = yield* killWhileCreating(dataDir, afterMs)
        if (interrupted) cutShort.push(afterMs)
        yield* Effect.scoped(Effect.gen(function*() {
          const server = yield* startServer({ DATA_DIR: dataDir })
          const health = yield* Effect.promise(() => fetch(`${server.base}/health`))
          expect(health.status).toBe(200)
          const warned = logLines(server.lines).some((log) => log.message === remadeWarning(dataDir))
          expect(warned).toBe(interrupted)
          expect(existsSync(Path.join(dataDir, "postline.creating"))).toBe(false)
        }))
      }
      // The moments must include some within the creation, or this test proves nothing.
      expect(cutShort.length).toBeGreaterThanOrEqual(2)
    }))

  it.scopedLive("is made from the build's template, migrated already, with secrets of its own", () =>
    Effect.gen(function*() {
      const made = []
      for (const _ of [1, 2]) {
        const dataDir = yield* scopedTempDir("postline-create-")
        const lines = yield* Effect.scoped(Effect.map(startServer({ DATA_DIR: dataDir, LOG_LEVEL: "DEBUG" }), ({ lines }) => lines))
        const logs = logLines(lines).map(({ message }) => message)
        expect(logs).toContain(`Made a new embedded database in ${dataDir} from the build's template`)
        expect(logs).not.toContain("Running migration")
        made.push(yield* Effect.promise(async () => {
          const db = await PGlite.create(dataDir)
          try {
            const [{ value }] = (await db.query<{ value: string }>("SELECT value FROM server_secrets WHERE name = 'cursor'")).rows
            const [{ count }] = (await db.query<{ count: number }>("SELECT count(*)::int AS count FROM postline_migrations")).rows
            return { secret: value, migrations: count }
          } finally {
            await db.close()
          }
        }))
      }
      expect(made.map(({ migrations }) => migrations)).toEqual([Object.keys(migrations).length, Object.keys(migrations).length])
      expect(made[0]!.secret).toMatch(/^[0-9a-f]{64}$/)
      expect(made[1]!.secret).toMatch(/^[0-9a-f]{64}$/)
      expect(made[0]!.secret).not.toBe(made[1]!.secret)
    }))

  it.scopedLive("is not made beside files that are not Postline's", () =>
    Effect.gen(function*() {
      const dataDir = yield* scopedTempDir("postline-create-")
      writeFileSync(Path.join(dataDir, "notes.txt"), "mine")
      mkdirSync(Path.join(dataDir, "photos"))
      const server = spawnServer({ DATA_DIR: dataDir, PORT: String(yield* freePort) })
      expect(yield* Effect.promise(() => server.exited)).toBe(1)
      expect(logLines(server.lines)).toEqual([expect.objectContaining({
        logLevel: "FATAL",
        message: "The server could not start",
        cause: expect.stringContaining(
          `The data folder ${dataDir} holds no database but other files (notes.txt, photos): ` +
            "choose an empty or new folder as DATA_DIR"
        )
      })])
      expect(existsSync(Path.join(dataDir, "notes.txt"))).toBe(true)
    }))
})
