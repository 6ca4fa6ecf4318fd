import { PGlite } from "@electric-sql/pglite"
import { createPgConfig } from "@electric-sql/pglite/node-postgres"
import { SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Config, Effect, Layer, Option } from "effect"
import Pg from "pg"
import Fs from "node:fs"
import { openDataDir } from "./DataDirCreation.js"
import { templateFile, unpackTemplate } from "./DataDirTemplate.js"
import { lockDataDir } from "./DataDirLock.js"
import { durableStartParams, SyncingNodeFS } from "./SyncingNodeFS.js"
import { layerPostgres, PostgresTimeoutsConfig } from "./Postgres.js"
import { retryStart, StartRetryConfig } from "./StartRetry.js"

// Rows keep the column names their statements give them: statements name each column after its
// field (Database/Columns.ts), which costs nothing per row, unlike a renaming pass.

/**
 * PostgreSQL's default 128 MB buffer pool lives in the embedded database's
 * WebAssembly memory, inside the server's own process, and fills under load;
 * the operating system's page cache still holds the data folder's files.
 */
const embeddedSettings = ["-c", "shared_buffers=16MB"]

/**
 * Embedded PostgreSQL (PGlite) in `dataDir`, or in memory for `memory://`.
 * PGlite is a single session: a pool of exactly one client serialises every
 * statement and holds it for a whole transaction, so transactions never interleave.
 * With `fsync` (the default), a commit is on the disk when it returns (see SyncingNodeFS.ts).
 */
export const layerEmbedded = (dataDir: string, options: { readonly fsync: boolean } = { fsync: true }) =>
  PgClient.layerFromPool({
    acquire: Effect.gen(function*() {
      const inMemory = dataDir.startsWith("memory://")
      if (!inMemory) yield* lockDataDir(dataDir)
      const startParams = [...PGlite.defaultStartParams, ...embeddedSettings]
      const create = Effect.tryPromise({
        try: () =>
          inMemory || !options.fsync
            ? PGlite.create(dataDir, { startParams })
            : PGlite.create({ fs: new SyncingNodeFS(dataDir), startParams: durableStartParams(startParams) }),
        catch: (cause) => new SqlError.SqlError({ cause, message: `Failed to open the embedded database in ${dataDir}` })
      })
      // A new folder is unpacked from the build's template, where there is one, rather than made by initdb.
      const template = Fs.existsSync(templateFile)
        ? Effect.try({
          try: () => unpackTemplate(templateFile, dataDir),
          catch: (cause) => new SqlError.SqlError({ cause, message: `Failed to make the embedded database in ${dataDir}: ${cause}` })
        })
        : undefined
      const pglite = yield* Effect.acquireRelease(
        inMemory ? create : openDataDir(dataDir, create, { durable: options.fsync, template }),
        (db) => Effect.promise(() => db.close())
      )
      return yield* Effect.acquireRelease(
        Effect.sync(() => new Pg.Pool({ ...createPgConfig(pglite), max: 1, idleTimeoutMillis: 0 })),
        (pool) => Effect.promise(() => pool.end())
      )
    }).pipe(Effect.mapError((error) => error._tag === "SqlError" ? error : new SqlError.SqlError({ cause: error, message: error.message })))
  })

/**
 * `DATABASE_URL` selects a PostgreSQL server, which the server waits for at start (it may be
 * starting too); without it the embedded database lives in `DATA_DIR`.
 */
export const SqlLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const url = yield* Config.option(Config.redacted("DATABASE_URL"))
    if (Option.isSome(url)) {
      const timeouts = yield* PostgresTimeoutsConfig
      return retryStart(layerPostgres(url.value, timeouts), yield* StartRetryConfig)
    }
    const dataDir = yield* Config.string("DATA_DIR").pipe(Config.withDefault("./data"))
    const fsync = yield* Config.boolean("EMBEDDED_FSYNC").pipe(Config.withDefault(true))
    return layerEmbedded(dataDir, { fsync })
  })
)
