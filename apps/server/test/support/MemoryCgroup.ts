import { Effect, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs"
import * as Path from "node:path"

/** Where Linux mounts the cgroup v1 memory controller. */
const controller = "/sys/fs/cgroup/memory"

export interface MemoryCgroup {
  readonly path: string
  /** How many processes the kernel ended for memory in it. */
  readonly oomKills: () => number
}

/** A memory cgroup (v1) of `limitBytes` below this process's own, or why none can be made. */
const made = (limitBytes: number): MemoryCgroup | string => {
  const own = existsSync("/proc/self/cgroup") ? /^\d+:memory:(.*)$/m.exec(readFileSync("/proc/self/cgroup", "utf8"))?.[1] : undefined
  if (own === undefined || !existsSync(controller)) return "no cgroup v1 memory controller on this machine"
  const path = Path.join(controller, own, `postline-test-${randomBytes(4).toString("hex")}`)
  try {
    mkdirSync(path)
    writeFileSync(Path.join(path, "memory.limit_in_bytes"), String(limitBytes))
  } catch (error) {
    if (existsSync(path)) rmdirSync(path)
    return `a memory cgroup could not be made at ${path}: ${(error as Error).message}`
  }
  return {
    path,
    oomKills: () => Number(/^oom_kill (\d+)/m.exec(readFileSync(Path.join(path, "memory.oom_control"), "utf8"))?.[1] ?? 0)
  }
}

/** Why no memory cgroup can be made here (not Linux, no v1 memory controller, not root); none when one can. */
export const memoryCgroupProblem = (): string | undefined => {
  const probe = made(1024 * 1024)
  if (typeof probe === "string") return probe
  rmdirSync(probe.path)
  return undefined
}

/** A memory cgroup (v1) of `limitBytes` below this process's own, removed with the scope once empty. */
export const scopedMemoryCgroup = (limitBytes: number): Effect.Effect<MemoryCgroup, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const cgroup = made(limitBytes)
      if (typeof cgroup === "string") throw new Error(cgroup)
      return cgroup
    }),
    (cgroup) =>
      Effect.promise(async () => {
        // Its processes are gone once the scope's server is killed; the kernel needs a moment to let it go.
        for (let attempt = 0; attempt < 100; attempt++) {
          try {
            return rmdirSync(cgroup.path)
          } catch {
            await new Promise((wait) => setTimeout(wait, 100))
          }
        }
      })
  )
