import { execFileSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import Pg from "pg"
import type { TestProject } from "vitest/node"

// Vitest's own state does not exist where a global setup runs, and the server's packages do not resolve from
// here: DatabaseTemplate.ts makes the template in a process of its own.

declare module "vitest" {
  export interface ProvidedContext {
    /**
     * The migrated database that each test's new database is a copy of: on the embedded database the file of its
     * data folder (PGlite's `dumpDataDir`), on PostgreSQL the name of a template database.
     */
    readonly databaseTemplate: string
  }
}

const serverDir = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../..")
const postgresAdminUrl = process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

const makeTemplate = (kind: "embedded" | "postgres", target: string) =>
  execFileSync(process.execPath, ["--import", "tsx", "test/support/DatabaseTemplate.ts", kind, target], {
    cwd: serverDir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"]
  })

const dropDatabase = async (name: string) => {
  const client = new Pg.Client({ connectionString: postgresAdminUrl })
  await client.connect()
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  } finally {
    await client.end()
  }
}

/** Runs the migrations once per run and database, not once per test database. */
export default function setup(project: TestProject) {
  if (project.config.env.TEST_DATABASE === "postgres") {
    const name = makeTemplate("postgres", postgresAdminUrl)
    project.provide("databaseTemplate", name)
    return () => dropDatabase(name)
  }
  const folder = mkdtempSync(Path.join(tmpdir(), "postline-template-"))
  project.provide("databaseTemplate", makeTemplate("embedded", folder))
  return () => rmSync(folder, { recursive: true, force: true })
}
