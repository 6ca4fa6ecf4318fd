import { Data, Effect } from "effect"
import Fs from "node:fs"
import * as Path from "node:path"

export class DataDirUnusable extends Data.TaggedError("DataDirUnusable")<{ readonly message: string }> {}

/** Present from the moment a database starts being made in the folder until it is complete. */
const creatingMarker = "postline.creating"

/** Files that may sit beside the database, and that a new database may be made beside (`assets`: the media folder). */
const keptEntries = new Set(["postline.lock", "credentials.key", "lost+found", "assets", creatingMarker])

const exists = (dataDir: string, name: string) => Fs.existsSync(Path.join(dataDir, name))

const syncPath = (path: string) => {
  const descriptor = Fs.openSync(path, "r")
  try {
    Fs.fsyncSync(descriptor)
  } finally {
    Fs.closeSync(descriptor)
  }
}

/** Writes or removes a file, and makes the change to the folder survive a crash of the machine. */
const durably = (dataDir: string, change: () => void) => {
  change()
  syncPath(dataDir)
}

/** PGlite writes a new database without syncing it: every file and folder is synced once it is made. */
const syncTree = (dir: string) => {
  for (const entry of Fs.readdirSync(dir, { withFileTypes: true })) {
    const path = Path.join(dir, entry.name)
    if (entry.isDirectory()) syncTree(path)
    else if (entry.isFile()) syncPath(path)
  }
  syncPath(dir)
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
 * when the folder holds none, or opens what `template.unpack` wrote there first, and then lets
 * `template.adopt` make the copy its own. A kill while it is being made leaves a folder PGlite
 * cannot open: the marker file says so at the next start, and the half-made database is made
 * again. With `durable`, the new database's files reach the disk before the marker goes.
 */
export const openDataDir = <A, E, E2 = never, E3 = never>(
  dataDir: string,
  open: Effect.Effect<A, E>,
  options: {
    readonly durable: boolean
    readonly template?: {
      readonly unpack: Effect.Effect<void, E2>
      readonly adopt: (opened: A) => Effect.Effect<void, E3>
    } | undefined
  }
) =>
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
    if (options.template) yield* options.template.unpack
    const opened = yield* open
    if (options.template) yield* options.template.adopt(opened)
    if (options.durable) syncTree(dataDir)
    durably(dataDir, () => Fs.rmSync(Path.join(dataDir, creatingMarker)))
    yield* Effect.logInfo(
      `Made a new embedded database in ${Path.resolve(dataDir)} ${options.template ? "from the build's template" : "with initdb"}`
    )
    return opened
  })
