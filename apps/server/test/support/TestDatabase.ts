import { PGlite } from "@electric-sql/pglite"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted, type Scope } from "effect"
import Pg from "pg"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { inject } from "vitest"
import { layerPostgres } from "../../src/Database/Postgres.js"
import { embeddedStartParams, layerOverPGlite, newServerSecrets } from "../../src/Database/Sql.js"

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

const databaseOfItsOwn = (template?: string) =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const name = `postline_test_${randomBytes(6).toString("hex")}`
      yield* withAdminClient((client) => client.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ""}`))
      const url = new URL(postgresAdminUrl)
      url.pathname = `/${name}`
      return { name, url: url.toString() }
    }),
    ({ name }) => withAdminClient((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  )

/** An empty database of its own on the PostgreSQL server, dropped when the scope closes. */
export const scopedPostgresDatabase = databaseOfItsOwn()

/**
 * PGlite's WebAssembly and file-system bundle, read and compiled once per worker: each database of a test file
 * starts from them, as from the migrated template (DatabaseTemplate.setup.ts), instead of compiling, running
 * initdb and migrating anew.
 */
// Node.js has WebAssembly's functions; the project's types (ES2023 and node, no DOM) declare its types alone.
const { compile } = (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WebAssembly.Module> } }).WebAssembly

const pgliteFiles = (() => {
  const dist = Path.dirname(createRequire(import.meta.url).resolve("@electric-sql/pglite"))
  let loaded: Promise<{ readonly pgliteWasmModule: WebAssembly.Module; readonly fsBundle: Blob }> | undefined
  return () =>
    loaded ??= Promise.all([
      readFile(Path.join(dist, "pglite.wasm")).then(compile),
      readFile(Path.join(dist, "pglite.data")).then((bytes) => new Blob([bytes]))
    ]).then(([pgliteWasmModule, fsBundle]) => ({ pgliteWasmModule, fsBundle }))
})()

const migratedEmbedded = layerOverPGlite(Effect.acquireRelease(
  Effect.promise(async () =>
    PGlite.create({
      ...(await pgliteFiles()),
      loadDataDir: new Blob([readFileSync(inject("databaseTemplate"))]),
      startParams: embeddedStartParams
    })
  ),
  (pglite) => Effect.promise(() => pglite.close())
))

const migratedPostgres = Layer.unwrapScoped(
  Effect.map(databaseOfItsOwn(inject("databaseTemplate")), ({ url }) => layerPostgres(Redacted.make(url)))
)

/** Secrets of its own, as a data folder made from the build's template gets: the template's would be every test's. */
const secretsOfItsOwn = Layer.effectDiscard(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(newServerSecrets)))

/** A new, migrated database for each test layer, on the kind this project runs: a copy of the run's template. */
export const TestDatabase = secretsOfItsOwn.pipe(
  Layer.provideMerge(testDatabaseKind === "postgres" ? migratedPostgres : migratedEmbedded)
)

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
