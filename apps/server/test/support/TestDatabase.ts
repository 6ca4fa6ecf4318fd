import { Effect, Layer, Redacted, type Scope } from "effect"
import Pg from "pg"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { MigrationsLive } from "../../src/Database/Migrations.js"
import { layerPostgres } from "../../src/Database/Postgres.js"
import { layerEmbedded } from "../../src/Database/Sql.js"

/** Which database the suite runs on: set per vitest project (see vitest.workspace.ts). */
export const testDatabaseKind = process.env.TEST_DATABASE === "postgres" ? "postgres" : "embedded"

export const postgresAdminUrl = process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

const withAdminClient = <A>(f: (client: Pg.Client) => Promise<A>) =>
  Effect.promise(async () => {
    const client = new Pg.Client({ connectionString: postgresAdminUrl })
    await client.connect()
    try {
      return await f(client)
    } finally {
      await client.end()
    }
  })

/** A database of its own on the PostgreSQL server, dropped when the scope closes. */
export const scopedPostgresDatabase = Effect.acquireRelease(
  Effect.gen(function*() {
    const name = `postline_test_${randomBytes(6).toString("hex")}`
    yield* withAdminClient((client) => client.query(`CREATE DATABASE ${name}`))
    const url = new URL(postgresAdminUrl)
    url.pathname = `/${name}`
    return { name, url: url.toString() }
  }),
  ({ name }) => withAdminClient((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
)

const freshSql = testDatabaseKind === "postgres"
  ? Layer.unwrapScoped(Effect.map(scopedPostgresDatabase, ({ url }) => layerPostgres(Redacted.make(url))))
  : layerEmbedded("memory://")

/** A new, migrated database for each test layer, on the kind this project runs. */
export const TestDatabase = MigrationsLive.pipe(Layer.provideMerge(freshSql))

/** A new empty folder, removed when the scope closes. */
export const scopedTempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(Path.join(tmpdir(), prefix))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  )

/** A server on this PostgreSQL database, with the credentials key that a server on PostgreSQL must be given. */
export const postgresEnv = (url: string) => ({ DATABASE_URL: url, CREDENTIALS_KEY: randomBytes(32).toString("base64") })

/** The environment of a process that uses a fresh database of this project's kind. */
export const freshDatabaseEnv: Effect.Effect<Record<string, string>, never, Scope.Scope> = testDatabaseKind === "postgres"
  ? Effect.map(scopedPostgresDatabase, ({ url }) => postgresEnv(url))
  : Effect.map(scopedTempDir("postline-data-"), (dir) => ({ DATA_DIR: dir }))
