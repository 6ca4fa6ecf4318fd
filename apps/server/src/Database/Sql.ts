import { PGlite } from "@electric-sql/pglite"
import { createPgConfig } from "@electric-sql/pglite/node-postgres"
import { SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, type Scope } from "effect"
import Pg from "pg"
import Fs from "node:fs"
import { openDataDir } from "./DataDirCreation.js"
import { templateFile, unpackTemplate } from "./DataDirTemplate.js"
import { lockDataDir } from "./DataDirLock.js"
import { durableStartParams, SyncingNodeFS } from "./SyncingNodeFS.js"
import { CurrentDeployment } from "../Deployment.js"
import { layerPostgres } from "./Postgres.js"
import { unfixableByWaiting } from "./PostgresTarget.js"
import { retryStart } from "./StartRetry.js"

// Rows keep the column names their statements give them: statements name each column after its
// field (Database/Columns.ts), which costs nothing per row, unlike a renaming pass.

/**
 * PostgreSQL's default 128 MB buffer pool lives in the embedded database's
 * WebAssembly memory, inside the server's own process, and fills under load;
 * the operating system's page cache still holds the data folder's files.
 */
export const embeddedStartParams = [...PGlite.defaultStartParams, "-c", "shared_buffers=16MB"]

/**
 * Gives a database copied from a template secrets of its own, made as migration 0001 makes them: every
 * installation signs its cursors with its own.
 */
export const newServerSecrets =
  "UPDATE server_secrets SET value = replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '') WHERE name = 'cursor'"

/**
 * The SQL client over the PGlite instance `open` gives, closed with the layer.
 * PGlite is a single session: a pool of exactly one client serialises every
 * statement and holds it for a whole transaction, so transactions never interleave.
 */
export const layerOverPGlite = <E extends { readonly message: string }>(
  open: Effect.Effect<PGlite, E, Scope.Scope>
) =>
  PgClient.layerFromPool({
    acquire: Effect.gen(function*() {
      const pglite = yield* open
      return yield* Effect.acquireRelease(
        Effect.sync(() => new Pg.Pool({ ...createPgConfig(pglite), max: 1, idleTimeoutMillis: 0 })),
        (pool) => Effect.promise(() => pool.end())
      )
    }).pipe(Effect.mapError((error) =>
      error instanceof SqlError.SqlError ? error : new SqlError.SqlError({ cause: error, message: error.message })
    ))
  })

/**
 * Embedded PostgreSQL (PGlite) in `dataDir`, or in memory for `memory://`.
 * With `fsync` (the default), a commit is on the disk when it returns (see SyncingNodeFS.ts).
 */
export const layerEmbedded = (dataDir: string, options: { readonly fsync: boolean } = { fsync: true }) =>
  layerOverPGlite(Effect.gen(function*() {
    const inMemory = dataDir.startsWith("memory://")
    if (!inMemory) yield* lockDataDir(dataDir)
    const create = Effect.tryPromise({
      try: () =>
        inMemory || !options.fsync
          ? PGlite.create(dataDir, { startParams: embeddedStartParams })
          : PGlite.create({ fs: new SyncingNodeFS(dataDir), startParams: durableStartParams(embeddedStartParams) }),
      catch: (cause) => new SqlError.SqlError({ cause, message: `Failed to open the embedded database in ${dataDir}` })
    })
    // A new folder is unpacked from the build's template, where there is one, rather than made by initdb and
    // migrated; its secrets are then made anew, so that no two installations share the template's.
    const template = Fs.existsSync(templateFile)
      ? {
        unpack: Effect.try({
          try: () => unpackTemplate(templateFile, dataDir),
          catch: (cause) => new SqlError.SqlError({ cause, message: `Failed to make the embedded database in ${dataDir}: ${cause}` })
        }),
        adopt: (pglite: PGlite) =>
          Effect.tryPromise({
            try: () => pglite.exec(newServerSecrets),
            catch: (cause) => new SqlError.SqlError({ cause, message: `Failed to make the embedded database in ${dataDir}: ${cause}` })
          })
      }
      : undefined
    return yield* Effect.acquireRelease(
      inMemory ? create : openDataDir(dataDir, create, { durable: options.fsync, template }),
      (db) => Effect.promise(() => db.close())
    )
  }))

/**
 * The deployment's database: a PostgreSQL server, which the server waits for at start (it may be
 * starting too) unless it refused for good (no such database, a wrong password), or the embedded
 * database in its data folder.
 */
export const SqlLive = Layer.unwrapEffect(
  Effect.map(CurrentDeployment, (deployment) =>
    deployment._tag === "Postgres"
      ? retryStart(
        layerPostgres(deployment.url, deployment.timeouts).pipe(
          Layer.mapError((error) => unfixableByWaiting(deployment.target, error))
        ),
        deployment.startRetry
      )
      : layerEmbedded(deployment.dataDir, { fsync: deployment.fsync }))
)
