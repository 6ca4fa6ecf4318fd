import { PGlite } from "@electric-sql/pglite"
import { Effect } from "effect"
import { runMigrations } from "./Migrations.js"
import { embeddedStartParams, layerOverPGlite } from "./Sql.js"

/**
 * A new embedded database with every migration run, as a tar of its data folder (PGlite's `dumpDataDir`):
 * the build's template of a new data folder (TemplateMain.ts), and the tests' of their databases.
 */
export const migratedDataDirTar = async (compression: "gzip" | "none") => {
  const pglite = await PGlite.create({ startParams: embeddedStartParams })
  try {
    await Effect.runPromise(Effect.provide(runMigrations, layerOverPGlite(Effect.succeed(pglite))))
    // Everything on the disk pages: a copy starts from this checkpoint with nothing to redo.
    await pglite.exec("CHECKPOINT")
    return Buffer.from(await (await pglite.dumpDataDir(compression)).arrayBuffer())
  } finally {
    await pglite.close()
  }
}
