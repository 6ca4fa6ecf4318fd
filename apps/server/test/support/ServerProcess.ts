import { Effect, type Scope } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { inject } from "vitest"
import { startNodeFlags } from "../../scripts/start-flags.mjs"

export const serverDir = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../..")

/** The Node.js flags of `pnpm start`, so that a test process has the same bounded heap. */
export const startFlags = startNodeFlags()

export const freePort = Effect.async<number>((resume) => {
  const probe = createServer().listen(0, "127.0.0.1", () => {
    const { port } = probe.address() as { port: number }
    probe.close(() => resume(Effect.succeed(port)))
  })
})

export interface ServerProcess {
  readonly child: ChildProcess
  readonly base: string
  readonly lines: Array<string>
  readonly exited: Promise<number | null>
}

/** The bundled server (`main`) or admin command (`admin`) that this test run built. */
export const bundled = (entry: "main" | "admin") => Path.join(inject("serverBundle"), `${entry}.js`)

/** Where a server process runs: in a memory cgroup (v1) of its own from its first instruction, with `cgroup`. */
export interface SpawnOptions {
  /** The cgroup's folder, under /sys/fs/cgroup/memory: what the server starts later is counted there too. */
  readonly cgroup?: string
}

/** Spawns the bundled server as `pnpm start` runs it, with only `env` in its environment. */
export const spawnServer = (env: Record<string, string>, options: SpawnOptions = {}) => {
  const args = [...startFlags, bundled("main")]
  const [command, commandArgs] = options.cgroup === undefined
    ? [process.execPath, args]
    : ["/bin/sh", ["-c", `echo $$ > "${Path.join(options.cgroup, "cgroup.procs")}" && exec "$0" "$@"`, process.execPath, ...args]]
  const child = spawn(command, commandArgs, {
    cwd: serverDir,
    env: { PATH: process.env.PATH ?? "", ...env }
  })
  const lines: Array<string> = []
  // "close", not "exit": by then every line the process wrote has been read.
  const exited = new Promise<number | null>((done) => child.once("close", (code) => done(code)))
  let buffered = ""
  child.stdout!.on("data", (chunk: Buffer) => {
    const complete = (buffered + chunk.toString()).split("\n")
    buffered = complete.pop()!
    lines.push(...complete)
  })
  child.stderr!.on("data", (chunk: Buffer) => lines.push(`stderr: ${chunk}`))
  return { child, lines, exited }
}

/** The networks' addresses Vitest set for this file (vitest.workspace.ts): names that never resolve. */
const unreachableNetworksOf = ({ DISCORD_API_URL, TELEGRAM_API_URL }: NodeJS.ProcessEnv): Record<string, string> =>
  Object.fromEntries(Object.entries({ DISCORD_API_URL, TELEGRAM_API_URL }).filter((entry): entry is [string, string] => entry[1] !== undefined))

/**
 * Starts the server on a free port and waits until it answers; killed when the scope closes. The port is free when
 * probed, but another file's listener may take it before the server binds it: then it starts again on another.
 */
export const startServer = (env: Record<string, string>, options: SpawnOptions = {}): Effect.Effect<ServerProcess, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.flatMap(freePort, (port) =>
      Effect.promise(async (): Promise<ServerProcess | "port taken"> => {
        const started = spawnServer({
          HOST: "127.0.0.1",
          LOG_LEVEL: "WARN",
          // A test's calls reuse one connection across its pauses. With the 5 s default, a server that a busy
          // machine stalls can close it just as the next call goes out ("fetch failed"): that race is HTTP's,
          // not a rule of Postline's. A test of the timeouts sets its own.
          HTTP_KEEP_ALIVE_TIMEOUT_MS: "600000",
          // Names that never resolve (vitest.workspace.ts sets them for every file), unless the test gives a fake.
          ...unreachableNetworksOf(process.env),
          ...env,
          PORT: env.PORT ?? String(port)
        }, options)
        const base = `http://127.0.0.1:${env.PORT ?? port}`
        let exitCode: number | null | undefined
        void started.exited.then((code) => (exitCode = code))
        for (;;) {
          if (exitCode !== undefined) {
            if (env.PORT === undefined && started.lines.some((line) => line.includes(`PORT ${port} is in use`))) return "port taken"
            throw new Error(`server exited with ${exitCode}:\n${started.lines.join("\n")}`)
          }
          const up = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2000) })
            .then(async (r) => r.ok && ((await r.json()) as { status?: unknown }).status === "ok", () => false)
          if (up) return { ...started, base }
          await new Promise((wait) => setTimeout(wait, 100))
        }
      })),
    (server) => Effect.sync(() => server === "port taken" || server.child.kill("SIGKILL"))
  ).pipe(Effect.flatMap((server) => server === "port taken" ? startServer(env, options) : Effect.succeed(server)))

/** Creates a user with `pnpm admin users create` on the database of `env` (through its server, when one runs). */
export const createUserWithToken = (env: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<{ readonly id: string; readonly token: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [
        bundled("admin"),
        "users",
        "create",
        "--email",
        `${Math.random().toString(36).slice(2)}@example.com`,
        "--name",
        "Process User"
      ], { cwd: serverDir, env: { PATH: process.env.PATH ?? "", ...env } })
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk))
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk))
      child.once("close", (code) => code === 0 ? resolve(JSON.parse(stdout)) : reject(new Error(stderr)))
    })
  )

/** A server's answer: its status, its Idempotent-Replayed header, and its body as sent and as JSON. */
export interface ProcessResponse {
  readonly status: number
  readonly replayed: string | null
  readonly text: string
  readonly body: any
}

/** Calls to a server process as the holder of `token`: JSON in, status and JSON body out. */
export const callsAs = (server: Pick<ServerProcess, "base">, token: string) =>
(method: string, path: string, json?: unknown, headers: Record<string, string> = {}) =>
  Effect.promise(async (): Promise<ProcessResponse> => {
    const response = await fetch(`${server.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(json !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      ...(json !== undefined ? { body: JSON.stringify(json) } : {})
    }).catch((error: Error) => {
      // "fetch failed" alone does not say why: the cause does (refused, reset, closed).
      const cause = error.cause as { code?: string; message?: string } | undefined
      throw new Error(`${method} ${path}: ${error.message} (${cause?.code ?? cause?.message ?? "no cause"})`, { cause: error })
    })
    const text = await response.text()
    return { status: response.status, replayed: response.headers.get("idempotent-replayed"), text, body: text === "" ? null : JSON.parse(text) }
  })

/** A process's resident memory now (VmRSS) and its peak since it started or was reset (VmHWM), in bytes. */
export const memoryOf = (pid: number) => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const bytes = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN) * 1024
  return { rss: bytes("VmRSS"), peak: bytes("VmHWM") }
}

/** Sets a process's VmHWM back to its current RSS (Linux's clear_refs), so that a later peak is a later phase's own. */
export const resetPeakMemory = (pid: number) => writeFileSync(`/proc/${pid}/clear_refs`, "5")

/**
 * Watches a process's memory from now on: VmHWM reset, VmRSS polled every `everyMs`. `stop()` returns the
 * highest RSS polled, the kernel's own peak since the reset (which no poll can miss), and the samples.
 */
export const watchMemory = (pid: number, everyMs = 50) => {
  resetPeakMemory(pid)
  const samples: Array<{ readonly atMs: number; readonly rss: number }> = []
  const startedAt = performance.now()
  const poll = () => {
    try {
      samples.push({ atMs: performance.now() - startedAt, rss: memoryOf(pid).rss })
    } catch {
      // the process ended: nothing more to read
    }
  }
  poll()
  const timer = setInterval(poll, everyMs)
  return {
    stop: () => {
      clearInterval(timer)
      poll()
      const polledPeak = Math.max(...samples.map(({ rss }) => rss))
      return { polledPeak, peak: Math.max(polledPeak, memoryOf(pid).peak), samples }
    }
  }
}
