import { describe, expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import Fs from "node:fs"
import * as Path from "node:path"
import { vi } from "vitest"
import { layerEmbedded } from "../src/Database/Sql.js"
import { scopedTempDir, testDatabaseKind } from "./support/TestDatabase.js"

/** How many fsync() calls reached the operating system while one row was committed. */
const fsyncsOfOneCommit = (fsync: boolean) =>
  Effect.gen(function*() {
    const dataDir = yield* scopedTempDir("postline-durable-")
    return yield* Effect.scoped(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE acknowledged (id int PRIMARY KEY)`
      const setting = yield* sql<{ fsync: string }>`SHOW fsync`
      const spy = vi.spyOn(Fs, "fsyncSync")
      try {
        yield* sql`INSERT INTO acknowledged VALUES (1)`
        return { setting: setting[0]!.fsync, calls: spy.mock.calls.length }
      } finally {
        spy.mockRestore()
      }
    }).pipe(Effect.provide(layerEmbedded(dataDir, { fsync }))))
  })

/** Every file under `dir`, with its path. */
const filesUnder = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => Path.join(entry.parentPath, entry.name))

// Only the embedded database keeps its files itself.
describe.skipIf(testDatabaseKind !== "embedded")("the embedded database's commits", () => {
  it.scopedLive("reach the disk with fsync() before they return", () =>
    Effect.gen(function*() {
      const { calls, setting } = yield* fsyncsOfOneCommit(true)
      expect(setting).toBe("on")
      expect(calls).toBeGreaterThanOrEqual(1)
    }))

  it.scopedLive("do not, with EMBEDDED_FSYNC=false", () =>
    Effect.gen(function*() {
      const { calls, setting } = yield* fsyncsOfOneCommit(false)
      expect(setting).toBe("off")
      expect(calls).toBe(0)
    }))

  it.scopedLive("of a new data folder: every file of it reaches the disk before it counts as made", () =>
    Effect.gen(function*() {
      const dataDir = yield* scopedTempDir("postline-durable-")
      const spy = vi.spyOn(Fs, "fsyncSync")
      const synced = yield* Effect.scoped(Layer.build(layerEmbedded(dataDir))).pipe(
        Effect.map(() => spy.mock.calls.length),
        Effect.ensuring(Effect.sync(() => spy.mockRestore()))
      )
      expect(synced).toBeGreaterThanOrEqual(filesUnder(dataDir).length)
    }))
})
