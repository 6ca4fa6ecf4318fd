// Databases of the benchmark: a PostgreSQL database of its own (created and
// dropped here), and PGlite data folders seeded directly.
import { randomBytes } from "node:crypto"
import { createRequire } from "node:module"
import { fileURLToPath, pathToFileURL } from "node:url"
import pg from "pg"

/** The PostgreSQL server: DATABASE_URL if set, else the local one. */
export const adminUrl = () => process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

const withDatabase = (url, database) => {
  const u = new URL(url)
  u.pathname = "/" + database
  return u.toString()
}

const withClient = async (url, f) => {
  const client = new pg.Client({ connectionString: url })
  client.on("error", () => {})
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end().catch(() => {})
  }
}

/** Creates `postline_bench_<random>`, a copy of `template` if given (no one may be connected to it); returns its name and URL. */
export const createDatabase = async (template) => {
  const name = `postline_bench_${randomBytes(5).toString("hex")}`
  await withClient(adminUrl(), (c) => c.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ""}`))
  return { name, url: withDatabase(adminUrl(), name) }
}

export const dropDatabase = (name) =>
  withClient(adminUrl(), (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))

export const serverVersion = (url) =>
  withClient(url, async (c) => (await c.query("SHOW server_version")).rows[0].server_version)

/** Runs the seed script on PostgreSQL, then VACUUM ANALYZE so that plans see the population. */
export const seedPostgres = (url, script) =>
  withClient(url, async (c) => {
    await c.query("SET synchronous_commit = off")
    await c.query(script)
    await c.query("VACUUM ANALYZE")
  })

export const queryPostgres = (url, text, values) => withClient(url, async (c) => (await c.query(text, values)).rows)

/** PGlite as apps/server resolves it (it is a dependency of the server, not of the root). */
export const loadPGlite = async () => {
  const serverPackage = fileURLToPath(new URL("../../apps/server/package.json", import.meta.url))
  const require = createRequire(serverPackage)
  const module = await import(pathToFileURL(require.resolve("@electric-sql/pglite")).href)
  return module.PGlite
}

/**
 * Seeds a PGlite data folder that the server has migrated (the server must be
 * stopped: one process at a time), then returns `after(db)`.
 */
export const seedPGlite = async (dataDir, script, after = async () => undefined) => {
  const PGlite = await loadPGlite()
  const db = await PGlite.create(dataDir)
  try {
    await db.exec(script)
    await db.exec("VACUUM ANALYZE")
    return await after(db)
  } finally {
    await db.close()
  }
}
