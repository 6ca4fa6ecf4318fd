// Child processes of the benchmark: start, wait for the first answer, measure
// memory, stop. Every child is registered so that cleanup() can end it.
import { spawn } from "node:child_process"
import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { request } from "node:http"
import { createServer } from "node:net"

const children = new Set()

/** A free TCP port on loopback. */
export const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })

/** One GET, resolving with the status code, or with 0 when nothing answers. */
export const probe = (port, path = "/health", timeoutMs = 1000) =>
  new Promise((resolve) => {
    const req = request({ host: "127.0.0.1", port, path, agent: false, timeout: timeoutMs }, (res) => {
      res.resume()
      res.on("end", () => resolve(res.statusCode))
    })
    req.on("timeout", () => req.destroy())
    req.on("error", () => resolve(0))
    req.end()
  })

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Reads VmRSS and VmHWM (peak) of a process, in MB. */
export const memoryOf = (pid) => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN)
    return { rssMb: kb("VmRSS") / 1024, hwmMb: kb("VmHWM") / 1024 }
  } catch {
    return { rssMb: NaN, hwmMb: NaN }
  }
}

/** Sets a process's VmHWM back to its current RSS (Linux's clear_refs): a later peak is then a later phase's own. */
export const resetPeakMemory = (pid) => writeFileSync(`/proc/${pid}/clear_refs`, "5")

/**
 * Starts `node [nodeArgs] script` (`node`: this process's Node.js unless another is given) with `env` (merged over a clean copy of
 * process.env without DATABASE_URL/DATA_DIR/PORT/HOST, so that the caller
 * decides them), logging to `logFile`. Resolves once GET /health answers 200,
 * polled every 10 ms, with `startMs`: spawn to first answer.
 */
export const startServer = async ({ name, script, env, node = process.execPath, nodeArgs = [], logFile, timeoutMs = 60_000 }) => {
  const base = { ...process.env }
  for (const key of ["DATABASE_URL", "DATA_DIR", "PORT", "HOST", "LOG_LEVEL", "NODE_OPTIONS"]) delete base[key]
  const port = Number(env.PORT)
  const fd = openSync(logFile, "a")
  const startedAt = performance.now()
  const child = spawn(node, [...nodeArgs, script], {
    env: { ...base, HOST: "127.0.0.1", ...env },
    stdio: ["ignore", fd, fd]
  })
  closeSync(fd)
  children.add(child)
  let exited = null
  const exitPromise = new Promise((resolve) =>
    child.once("exit", (code, signal) => {
      exited = { code, signal }
      children.delete(child)
      resolve(exited)
    })
  )
  const logTail = () => {
    try {
      return readFileSync(logFile, "utf8").split("\n").slice(-15).join("\n")
    } catch {
      return ""
    }
  }
  while (true) {
    if (exited) throw new Error(`${name} exited during start (${JSON.stringify(exited)}); log ${logFile}:\n${logTail()}`)
    if (performance.now() - startedAt > timeoutMs) {
      child.kill("SIGKILL")
      throw new Error(`${name} did not answer /health within ${timeoutMs} ms; log ${logFile}:\n${logTail()}`)
    }
    if ((await probe(port, "/health", 500)) === 200) break
    await sleep(10)
  }
  const startMs = performance.now() - startedAt
  return {
    name,
    port,
    pid: child.pid,
    startMs,
    url: `http://127.0.0.1:${port}`,
    memory: () => memoryOf(child.pid),
    exited: () => exited,
    logTail,
    /** SIGTERM, then SIGKILL after `graceMs`. Resolves with how it ended. */
    stop: async (graceMs = 10_000) => {
      if (exited) return exited
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs)
      const result = await exitPromise
      clearTimeout(timer)
      return result
    }
  }
}

/** Runs a command to completion (used for `pnpm build`-like steps), inheriting stdio. */
export const run = (command, args, options = {}) =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: "inherit", ...options })
    children.add(child)
    child.once("exit", (code) => {
      children.delete(child)
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(" ")} exited with ${code}`))
    })
    child.once("error", reject)
  })

/** Ends every child still running: SIGTERM, then SIGKILL. */
export const killChildren = async (graceMs = 3000) => {
  const waits = [...children].map((child) =>
    new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve()
      const timer = setTimeout(() => child.kill("SIGKILL"), graceMs)
      child.once("exit", () => {
        clearTimeout(timer)
        resolve()
      })
      child.kill("SIGTERM")
    })
  )
  await Promise.all(waits)
}

/**
 * The runner's cleanup, once, also on Ctrl-C and other stop signals: ends every child, runs `state.closers`,
 * drops `state.database` (if set) and removes `state.tmp`.
 */
export const makeCleanup = (state, log, dropDatabase) => {
  let cleaning
  const cleanup = () =>
    (cleaning ??= (async () => {
      await killChildren().catch(() => {})
      await Promise.all((state.closers ?? []).map((close) => close()))
      if (state.database) {
        await dropDatabase(state.database).then(
          () => log(`dropped database ${state.database}`),
          (error) => log(`could not drop database ${state.database}: ${error.message}`)
        )
      }
      if (state.tmp) rmSync(state.tmp, { recursive: true, force: true })
    })())
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.once(signal, () => {
      log(`${signal}: cleaning up`)
      cleanup().finally(() => process.exit(130))
    })
  }
  return cleanup
}
