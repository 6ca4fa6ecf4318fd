import { Data, Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"

export class DataDirLocked extends Data.TaggedError("DataDirLocked")<{ readonly message: string }> {}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

const tryLock = (file: string): boolean => {
  try {
    Fs.writeFileSync(file, String(process.pid), { flag: "wx" })
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
    const holder = Number(Fs.readFileSync(file, "utf8"))
    // Our own pid in the file means an earlier life of this pid crashed (a container restarting as pid 1).
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) return false
    // A lock left by a process that died: take it over.
    Fs.rmSync(file, { force: true })
    return tryLock(file)
  }
}

/**
 * PGlite's data folder can be opened by one process at a time. The lock is a
 * file holding the owner's pid, released when the scope closes.
 */
export const lockDataDir = (dataDir: string) => {
  const file = Path.join(dataDir, "postline.lock")
  return Effect.acquireRelease(
    Effect.suspend(() => {
      Fs.mkdirSync(dataDir, { recursive: true })
      return tryLock(file)
        ? Effect.void
        : Effect.fail(
          new DataDirLocked({
            message: `The data folder ${Path.resolve(dataDir)} is in use by another Postline process ` +
              `(pid ${Fs.readFileSync(file, "utf8").trim()}). Stop it first, or set DATABASE_URL.`
          })
        )
    }),
    () => Effect.sync(() => Fs.rmSync(file, { force: true }))
  )
}
