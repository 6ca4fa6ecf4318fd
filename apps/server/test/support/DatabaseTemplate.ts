// Makes the run's migrated database template (see DatabaseTemplate.setup.ts), in a process of its own, where the
// server's packages resolve as they do for the server.
//
//   node --import tsx test/support/DatabaseTemplate.ts embedded <folder>   writes <folder>/pgdata.tar, prints its path
//   node --import tsx test/support/DatabaseTemplate.ts postgres <admin URL> makes a template database, prints its name
import { Effect, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { writeFileSync } from "node:fs"
import * as Path from "node:path"
import Pg from "pg"
import { runMigrations } from "../../src/Database/Migrations.js"
import { layerPostgres } from "../../src/Database/Postgres.js"
import { migratedDataDirTar } from "../../src/Database/TemplateMaking.js"

/** A migrated PGlite data folder as a tar file: a test's database loads it instead of running initdb and the migrations. */
const embeddedTemplate = async (folder: string) => {
  const file = Path.join(folder, "pgdata.tar")
  writeFileSync(file, await migratedDataDirTar("none"))
  return file
}

/** A migrated template database on the PostgreSQL server: a test's database is created from it. */
const postgresTemplate = async (adminUrl: string) => {
  const name = `postline_template_${randomBytes(6).toString("hex")}`
  const admin = new Pg.Client({ connectionString: adminUrl })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}`)
    const url = new URL(adminUrl)
    url.pathname = `/${name}`
    await Effect.runPromise(Effect.provide(runMigrations, layerPostgres(Redacted.make(url.toString()))))
    // A database is copied only while no session is open on it.
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, [name])
  } finally {
    await admin.end()
  }
  return name
}

const [kind, target] = process.argv.slice(2)
if (!target || (kind !== "embedded" && kind !== "postgres")) throw new Error("usage: DatabaseTemplate.ts embedded <folder> | postgres <admin URL>")
process.stdout.write(kind === "embedded" ? await embeddedTemplate(target) : await postgresTemplate(target))
