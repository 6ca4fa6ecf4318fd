// V8's heap of a process the benchmark started, seen from outside. Preloaded (`node --import` this file) with
// BENCH_MEMORY_FILE set, it appends the process's memoryUsage() and heap limit to that file as a JSON line
// every 200 ms: unlike RSS, the heap cannot be read from /proc, and the lines written before a process ran out
// of heap stay. The runner reads the peaks with peakMemory(); imported without BENCH_MEMORY_FILE, it does nothing.
import { appendFileSync, existsSync, readFileSync } from "node:fs"
import { getHeapStatistics } from "node:v8"

const file = process.env.BENCH_MEMORY_FILE
if (file) {
  const sample = () => appendFileSync(file, `${JSON.stringify({ ...process.memoryUsage(), heapLimit: getHeapStatistics().heap_size_limit })}\n`)
  sample()
  // unref: the sampler never keeps a process alive.
  setInterval(sample, 200).unref()
}

/**
 * The peaks of a file written by the sampler, in MB: V8 heap used (`heapUsedMb`), and the heap limit the process
 * ran with (`heapLimitMb`, which shows the `--max-old-space-size` it was given).
 */
export const peakMemory = (path) => {
  const text = existsSync(path) ? readFileSync(path, "utf8") : ""
  // A line cut short by the process's end is left out.
  const lines = text.split("\n").flatMap((line) => {
    try {
      return [JSON.parse(line)]
    } catch {
      return []
    }
  })
  const peak = (key) => (lines.length ? Math.max(...lines.map((line) => line[key])) / 2 ** 20 : NaN)
  return { heapUsedMb: peak("heapUsed"), heapLimitMb: peak("heapLimit"), samples: lines.length }
}
