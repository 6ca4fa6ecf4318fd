import { Duration, Effect, Schedule } from "effect"
import { mkdir, mkdtemp, readdir, rm, stat, utimes } from "node:fs/promises"
import * as Path from "node:path"

// `postline-process-<lease seconds>-<random>`: the lease in the name, so that a process judges another's folder by
// the other's setting, not its own.
const processFolder = /^postline-process-([0-9]{1,9})-[A-Za-z0-9]{6}$/
// What requests of versions before process folders left directly in the folder: `mkdtemp("postline-")`.
const olderRequestFolder = /^postline-[A-Za-z0-9]{6}$/
const olderRequestSeconds = 24 * 3600

/** Whether the entry `name` (last touched at `mtimeMs`) belongs to no live process. */
const abandoned = (name: string, mtimeMs: number, now: number) => {
  const lease = processFolder.exec(name)?.[1]
  if (lease !== undefined) return now - mtimeMs > Number(lease) * 1000
  return olderRequestFolder.test(name) && now - mtimeMs > olderRequestSeconds * 1000
}

/** Removes the folders under `parent` that no live process owns: their owner stopped touching them for its lease. */
const removeAbandoned = async (parent: string, own: string) => {
  const now = Date.now()
  for (const entry of await readdir(parent, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === own) continue
    const path = Path.join(parent, entry.name)
    const stats = await stat(path).catch(() => undefined)
    if (stats !== undefined && abandoned(entry.name, stats.mtimeMs, now)) await rm(path, { recursive: true, force: true })
  }
}

/**
 * This process's own folder under `parent` (MEDIA_TMP_DIR, which several processes may share), for the files of
 * its requests. While the process lives it touches the folder every third of `leaseSeconds`; a folder untouched for
 * its owner's lease is a dead process's, with whatever its requests were writing, and is removed: at the start and
 * at every touch. The folder goes when the scope closes.
 */
export const processWorkDir = (parent: string, leaseSeconds: number) =>
  Effect.gen(function*() {
    yield* Effect.promise(() => mkdir(parent, { recursive: true }))
    const dir = yield* Effect.acquireRelease(
      Effect.promise(() => mkdtemp(Path.join(parent, `postline-process-${leaseSeconds}-`))),
      (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
    )
    const touch = Effect.tryPromise(async () => {
      const now = new Date()
      await utimes(dir, now, now)
      await removeAbandoned(parent, Path.basename(dir))
    })
    yield* touch.pipe(Effect.catchAll((error) => Effect.logWarning("Abandoned temporary files could not be removed", error)))
    yield* touch.pipe(
      Effect.catchAll((error) => Effect.logWarning("The process's temporary folder could not be touched", error)),
      Effect.repeat(Schedule.spaced(Duration.millis(leaseSeconds * 1000 / 3))),
      Effect.delay(Duration.millis(leaseSeconds * 1000 / 3)),
      Effect.forkScoped
    )
    return dir
  })
