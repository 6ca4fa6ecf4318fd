import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { StartupError } from "../StartupError.js"


const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * When the process started, in clock ticks since boot (field 22 of /proc/<pid>/stat), or
 * undefined where there is no /proc. A pid is reused; a pid with its start time is not.
 */
export const processStartTime = (pid: number): string | undefined => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name, in parentheses, may hold spaces: count the fields after it.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]
  } catch {
    return undefined
  }
}

/** The lock's content: `<pid> <start time>`, or `<pid>` alone where the start time is unknown. */
const ownContent = () => [process.pid, processStartTime(process.pid)].filter((part) => part !== undefined).join(" ")

const isHeld = (content: string) => {
  const [pidText, recordedStart] = content.trim().split(" ")
  const pid = Number(pidText)
  // Our own pid in the file means an earlier life of this pid crashed (a container restarting as pid 1).
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !isAlive(pid)) return false
  // The pid is alive; it is still the holder unless it has since been given to another process.
  const currentStart = processStartTime(pid)
  return recordedStart === undefined || currentStart === undefined || recordedStart === currentStart
}

const tryLock = (file: string): boolean => {
  try {
    Fs.writeFileSync(file, ownContent(), { flag: "wx" })
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
    if (isHeld(Fs.readFileSync(file, "utf8"))) return false
    // A lock left by a process that died: take it over.
    Fs.rmSync(file, { force: true })
    return tryLock(file)
  }
}

/** The file on `path`, or on the way to it, that stands where a folder should; undefined if none does. */
const fileInTheWay = (path: string): string | undefined => {
  for (let current = Path.resolve(path);; current = Path.dirname(current)) {
    let isDirectory: boolean | undefined
    try {
      isDirectory = Fs.statSync(current).isDirectory()
    } catch {
      // Not there (yet): look at its parent.
    }
    if (isDirectory !== undefined) return isDirectory ? undefined : current
    if (current === Path.dirname(current)) return undefined
  }
}

const unusableCodes = new Set(["EEXIST", "ENOTDIR", "EACCES", "EPERM", "EROFS"])

/** What stops the server from making or writing in its data folder, said as what to change. */
const notWritable = (dataDir: string, error: NodeJS.ErrnoException) => {
  const file = fileInTheWay(dataDir)
  // The folder itself, or the one of its parents that could not be made; not the lock file inside it.
  const denied = error.syscall === "mkdir" && error.path !== undefined ? error.path : dataDir
  const why = file !== undefined
    ? `${file} is a file, not a folder`
    : error.code === "EROFS"
    ? `${Path.resolve(dataDir)} is on a read-only file system`
    : `this process (uid ${process.getuid?.() ?? "?"}) may not create or write in ${Path.resolve(denied)}`
  return new StartupError({
    message: `DATA_DIR ${dataDir} is not a writable folder: ${why}; set DATA_DIR to a folder this process can write`
  })
}

/** Makes the folder and takes the lock; a folder that cannot be, or cannot be written, is a StartupError. */
const lockOrRefuse = (dataDir: string, file: string): boolean | StartupError => {
  try {
    Fs.mkdirSync(dataDir, { recursive: true })
    return tryLock(file)
  } catch (error) {
    if (unusableCodes.has((error as NodeJS.ErrnoException).code ?? "")) return notWritable(dataDir, error as NodeJS.ErrnoException)
    throw error
  }
}

/**
 * PGlite's data folder can be opened by one process at a time. The lock is a
 * file holding the owner's pid and start time, released when the scope closes.
 */
export const lockDataDir = (dataDir: string) => {
  const file = Path.join(dataDir, "postline.lock")
  return Effect.acquireRelease(
    Effect.suspend((): Effect.Effect<void, StartupError> => {
      const locked = lockOrRefuse(dataDir, file)
      if (locked instanceof StartupError) return Effect.fail(locked)
      return locked
        ? Effect.void
        : Effect.fail(
          new StartupError({
            message: `The data folder ${Path.resolve(dataDir)} is in use by another Postline process ` +
              `(pid ${Fs.readFileSync(file, "utf8").trim().split(" ")[0]}). Stop it first, or set DATABASE_URL.`
          })
        )
    }),
    () => Effect.sync(() => Fs.rmSync(file, { force: true }))
  )
}
