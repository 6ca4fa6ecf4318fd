// `pnpm start` as a new user runs it (issue 23): the wall time from the command to the first answer of
// /health, for a first start (a new data folder, an empty compile cache) and for warm starts.
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort, probe } from "./processes.mjs"

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs `pnpm start` in `root` with `env` until /health answers 200; then stops the whole process group. */
const timePnpmStart = async (root, env, timeoutMs = 60_000) => {
  const port = await freePort()
  const startedAt = performance.now()
  // Its own process group: pnpm does not pass SIGTERM on to the server it started.
  const { DATABASE_URL: _database, HOST: _host, ...inherited } = process.env
  const child = spawn("pnpm", ["start"], { cwd: root, detached: true, stdio: "ignore", env: { ...inherited, ...env, PORT: String(port) } })
  const exited = new Promise((resolve) => child.once("exit", resolve))
  let ended = false
  void exited.then(() => (ended = true))
  try {
    while ((await probe(port, "/health", 500)) !== 200) {
      if (ended) throw new Error("pnpm start exited before /health answered")
      if (performance.now() - startedAt > timeoutMs) throw new Error(`pnpm start: no answer within ${timeoutMs} ms`)
      await sleep(10)
    }
    return performance.now() - startedAt
  } finally {
    process.kill(-child.pid, "SIGTERM")
    await exited
  }
}

/**
 * First start (a new data folder and compile cache, as after `pnpm install`) and `warmStarts` warm starts of
 * `pnpm start`, in ms. The build is current (pnpm bench builds first), as it is after `pnpm install`.
 */
export const measurePnpmStart = async (root, warmStarts) => {
  const folder = mkdtempSync(join(tmpdir(), "postline-bench-start-"))
  const env = { DATA_DIR: join(folder, "data"), NODE_COMPILE_CACHE: join(folder, "compile-cache"), LOG_LEVEL: "WARN" }
  try {
    const firstMs = await timePnpmStart(root, env)
    const warmMs = []
    for (let i = 0; i < warmStarts; i++) warmMs.push(await timePnpmStart(root, env))
    return { firstMs, warmMs }
  } finally {
    rmSync(folder, { recursive: true, force: true })
  }
}
