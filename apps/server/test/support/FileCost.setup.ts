import { readFileSync } from "node:fs"
import { afterAll } from "vitest"

declare module "vitest" {
  interface TaskMeta {
    /**
     * CPU seconds the file's worker process and the processes it waited for spent while the file ran (a worker
     * runs several files, one after another).
     */
    readonly cpuSeconds?: number
  }
}

/** This process's CPU seconds, with those of its children that ended (servers, commands the file started). */
const cpuSeconds = () => {
  // /proc/self/stat fields 14-17: utime, stime, cutime, cstime, in clock ticks (100 a second on Linux).
  const fields = readFileSync("/proc/self/stat", "utf8").replace(/^.*\) /, "").split(" ")
  return fields.slice(11, 15).reduce((sum, ticks) => sum + Number(ticks), 0) / 100
}

// Run again before each file (with Vitest's `isolate: false` too): the file's count starts here, its imports included.
const atStart = cpuSeconds()

// The timing table (.ci/timings.mjs) reads it from the file's meta, which the worker sends to the main process.
afterAll((file) => {
  ;(file.meta as { cpuSeconds?: number }).cpuSeconds = cpuSeconds() - atStart
})
