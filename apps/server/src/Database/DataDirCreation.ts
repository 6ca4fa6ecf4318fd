import { Data, Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"

export class DataDirUnusable extends Data.TaggedError("DataDirUnusable")<{ readonly message: string }> {}

/** Present from the moment a database starts being made in the folder until it is complete. */
const creatingMarker = "postline.creating"

/** Files that may sit beside the database, and that a new database may be made beside. */
const keptEntries = new Set(["postline.lock", "credentials.key", "lost+found", creatingMarker])

const exists = (dataDir: string, name: string) => Fs.existsSync(Path.join(dataDir, name))

/** Writes or removes a file, and makes the change to the folder survive a crash of the machine. */
const durably = (dataDir: string, change: () => void) => {
  change()
  const folder = Fs.openSync(dataDir, "r")
  try {
    Fs.fsyncSync(folder)
  } finally {
    Fs.closeSync(folder)
  }
}

const removeHalfMade = (dataDir: string) =>
  Effect.gen(function*() {
    const removed = Fs.readdirSync(dataDir).filter((name) => !keptEntries.has(name))
    yield* Effect.logWarning(
      `The database in ${Path.resolve(dataDir)} was being created when the server stopped, and is incomplete: ` +
        "nothing was stored in it yet, so it is made again"
    )
    for (const name of removed) Fs.rmSync(Path.join(dataDir, name), { recursive: true, force: true })
  })

/**
 * Opens the embedded database in `dataDir` (locked by the caller) with `open`, which makes it
 * when the folder holds none. A kill while it is being made leaves a folder PGlite cannot open:
 * the marker file says so at the next start, and the half-made database is made again.
 */
export const openDataDir = <A, E>(dataDir: string, open: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    if (exists(dataDir, creatingMarker)) yield* removeHalfMade(dataDir)
    else if (exists(dataDir, "PG_VERSION")) return yield* open

    const foreign = Fs.readdirSync(dataDir).filter((name) => !keptEntries.has(name))
    if (foreign.length > 0) {
      return yield* new DataDirUnusable({
        message: `The data folder ${Path.resolve(dataDir)} holds no database but other files ` +
          `(${foreign.slice(0, 3).join(", ")}${foreign.length > 3 ? ", …" : ""}): choose an empty or new folder as DATA_DIR`
      })
    }
    durably(dataDir, () => Fs.writeFileSync(Path.join(dataDir, creatingMarker), ""))
    const opened = yield* open
    durably(dataDir, () => Fs.rmSync(Path.join(dataDir, creatingMarker)))
    return opened
  })
