/**
 * How fast the storage sweep removes what deleted assets leave (issue 20: "a sweep or an outbox — measure it"):
 * N objects are stored and their keys written to `storage_garbage` as an asset's delete writes them, then
 * sweeps run as the server's would (batches of 100, 8 removals at once) until none is left. Prints objects per
 * second for the media folder and, when it answers, the S3 server of the tests (Swift's s3api, .ci/swift-s3.sh).
 *
 *   pnpm tsx apps/server/bench/StorageSweep.ts [N]     (N: 2000 by default)
 *
 * The embedded database (in memory) holds the garbage table, as a fresh server's would.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { SqlClient } from "@effect/sql"
import { layerFileStorage } from "../src/Assets/FileStorage.js"
import { StorageGarbage } from "../src/Assets/Garbage.js"
import { layerS3Storage } from "../src/Assets/S3Storage.js"
import { MediaStorage } from "../src/Assets/Storage.js"
import { MigrationsLive } from "../src/Database/Migrations.js"
import { layerEmbedded } from "../src/Database/Sql.js"

const count = Number(process.argv[2] ?? 2000)

const measure = (label: string) =>
  Effect.gen(function*() {
    const storage = yield* MediaStorage
    const garbage = yield* StorageGarbage
    const sql = yield* SqlClient.SqlClient
    const file = Path.join(mkdtempSync(Path.join(tmpdir(), "sweep-bench-")), "object")
    writeFileSync(file, randomBytes(32 * 1024))
    const prefix = `sweep-bench-${randomBytes(4).toString("hex")}`
    const keys = Array.from({ length: count }, (_, i) => `${prefix}/${i}/original.png`)
    yield* Effect.forEach(keys, (key) => storage.putFile(key, file, "image/png"), { concurrency: 16, discard: true })
    yield* sql`INSERT INTO storage_garbage (key, not_before) SELECT value, now() FROM jsonb_array_elements_text(${JSON.stringify(keys)}::jsonb)`
    const started = performance.now()
    let removed = 0
    while (removed < count) {
      const swept = yield* garbage.sweep(100, storage.remove)
      if (swept === 0) break
      removed += swept
    }
    const seconds = (performance.now() - started) / 1000
    const left = yield* Effect.forEach(keys.slice(0, 20), (key) => storage.size(key))
    rmSync(Path.dirname(file), { recursive: true, force: true })
    console.log(
      `${label}: ${removed} of ${count} objects (32 KiB) removed in ${seconds.toFixed(2)} s, ` +
        `${(removed / seconds).toFixed(0)} objects/s; sampled objects still there: ${left.filter(Option.isSome).length}`
    )
  })

const database = MigrationsLive.pipe(Layer.provideMerge(layerEmbedded("memory://")))
const run = (label: string, storage: Layer.Layer<MediaStorage>) =>
  Effect.runPromise(measure(label).pipe(Effect.provide(StorageGarbage.Default), Effect.provide(storage), Effect.provide(database), Effect.orDie))

const folder = mkdtempSync(Path.join(tmpdir(), "sweep-bench-media-"))
await run("folder", layerFileStorage(folder))
rmSync(folder, { recursive: true, force: true })
const endpoint = process.env.TEST_S3_ENDPOINT ?? "http://127.0.0.1:8089"
const reachable = await fetch(endpoint).then(() => true, () => false)
if (reachable) {
  await run(
    "s3 (Swift)",
    layerS3Storage({
      bucket: process.env.TEST_S3_BUCKET ?? "postline-test",
      endpoint,
      region: "us-east-1",
      accessKeyId: Redacted.make(process.env.TEST_S3_ACCESS_KEY_ID ?? "postline:tester"),
      secretAccessKey: Redacted.make(process.env.TEST_S3_SECRET_ACCESS_KEY ?? "testing"),
      forcePathStyle: true
    })
  )
} else console.log(`s3: no server at ${endpoint}, skipped`)
