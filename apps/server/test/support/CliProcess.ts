// The postline CLI as a user runs it: the bundle this test run built, spawned as a process with an environment
// of its own, on a pipe (no terminal) or in a tmux pane (a terminal a test can type into and read).
import { Context, Effect, Layer } from "effect"
import { type ChildProcessWithoutNullStreams, execFile, spawn, spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Path from "node:path"
import { expect, inject } from "vitest"
import { grantCredits, publishEnv } from "./ProcessPublishing.js"
import { makeWebhookReceiver } from "./Publishing.js"
import { callsAs, createUserWithToken, freePort, type ServerProcess, startServer } from "./ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir } from "./TestDatabase.js"

/** The CLI bundle that this test run built (ServerBundle.setup.ts). */
export const cliPath = () => Path.join(inject("cliBundle"), "postline.js")

/**
 * The environment of a CLI run and nothing else: PATH, a home of its own (where its login is stored) and the
 * server, plus `extra` (POSTLINE_TOKEN, XDG_CONFIG_HOME…).
 */
export const cliEnv = (home: string, base: string, extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? "",
  HOME: home,
  POSTLINE_URL: base,
  ...extra
})

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs `postline <args>` to its end, its standard input an empty pipe (not a terminal). Killed after `seconds`,
 * so that a CLI that waits for ever fails the test instead of hanging it.
 */
export const runCli = (args: ReadonlyArray<string>, env: Record<string, string>, seconds = 300) =>
  Effect.promise(() =>
    new Promise<CliResult>((resolve) => {
      const child = execFile(
        process.execPath,
        [cliPath(), ...args],
        { env, timeout: seconds * 1000 },
        (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr })
      )
      child.stdin!.end()
    })
  )

/** The one JSON document of a `--json` run's standard output; its standard error in the failure when it is not one. */
export const jsonOf = (result: CliResult): any => {
  try {
    return JSON.parse(result.stdout)
  } catch {
    throw new Error(`not one JSON document (exit ${result.code}):\nstdout: ${result.stdout}\nstderr: ${result.stderr}`)
  }
}

/** `postline <args> --json` that must succeed: its answer. */
export const answerOf = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.map(runCli([...args, "--json"], env), (result) => {
    expect(result.code, result.stderr).toBe(0)
    return jsonOf(result)
  })

export interface RunningCli {
  readonly child: ChildProcessWithoutNullStreams
  /** What it has written so far. */
  readonly stdout: () => string
  readonly stderr: () => string
  readonly exited: Promise<number | null>
}

/** Starts `postline <args>` and lets it run (a login waiting for approval, `mcp` serving); killed when the scope closes. */
export const startCli = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync((): RunningCli => {
      const child = spawn(process.execPath, [cliPath(), ...args], { env })
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk))
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk))
      const exited = new Promise<number | null>((done) => child.once("close", (code) => done(code)))
      return { child, stdout: () => stdout, stderr: () => stderr, exited }
    }),
    ({ child }) => Effect.sync(() => child.kill("SIGKILL"))
  )

/** Reads `read` every 100 ms until `done` holds; fails, with the last value read, after `seconds`. */
export const waitUntil = <A>(what: string, read: () => A, done: (value: A) => boolean, seconds = 180) =>
  Effect.gen(function*() {
    const deadline = Date.now() + seconds * 1000
    for (;;) {
      const value = read()
      if (done(value)) return value
      if (Date.now() > deadline) return yield* Effect.die(new Error(`${what}: not within ${seconds} s; last read:\n${String(value)}`))
      yield* Effect.sleep("100 millis")
    }
  })

/** Whether tmux can be run here. */
export const tmuxAvailable = spawnSync("tmux", ["-V"]).status === 0

const shellQuoted = (word: string) => `'${word.replaceAll("'", "'\\''")}'`

const tmux = (socket: string, args: ReadonlyArray<string>) =>
  Effect.async<string>((resume) => {
    execFile("tmux", ["-L", socket, ...args], (error, stdout, stderr) =>
      resume(error ? Effect.die(new Error(`tmux ${args[0]} failed: ${stderr}`)) : Effect.succeed(stdout)))
  })

/**
 * `postline <args>` in a 200×50 tmux pane, a terminal of its own, on a tmux server of its own (so that nothing
 * else of the machine's tmux is touched): the pane then shows `EXIT:<status>` and stays 60 s for the test to
 * read. The server and the CLI are killed when the scope closes.
 */
export const cliInTmux = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.gen(function*() {
    const socket = `postline-cli-${randomBytes(6).toString("hex")}`
    const command = [
      "env",
      "-i",
      ...Object.entries(env).map(([name, value]) => shellQuoted(`${name}=${value}`)),
      shellQuoted(process.execPath),
      shellQuoted(cliPath()),
      ...args.map(shellQuoted)
    ].join(" ")
    yield* Effect.acquireRelease(
      tmux(socket, ["new-session", "-d", "-s", "cli", "-x", "200", "-y", "50", `${command}; echo EXIT:$?; sleep 60`]),
      () => Effect.ignore(tmux(socket, ["kill-server"]))
    )
    let pane = ""
    const capture = Effect.map(tmux(socket, ["capture-pane", "-p", "-t", "cli"]), (text) => (pane = text))
    return {
      /** Waits until the pane shows what `done` looks for; the pane's text. */
      waitFor: (what: string, done: (pane: string) => boolean, seconds = 30) =>
        Effect.gen(function*() {
          const deadline = Date.now() + seconds * 1000
          for (;;) {
            if (done(yield* capture)) return pane
            if (Date.now() > deadline) return yield* Effect.die(new Error(`${what}: not within ${seconds} s; the pane:\n${pane}`))
            yield* Effect.sleep("200 millis")
          }
        }),
      sendKeys: (...keys: ReadonlyArray<string>) => Effect.asVoid(tmux(socket, ["send-keys", "-t", "cli", ...keys]))
    }
  })

// What the CLI's tests start from.

/** A user of a server process with an organization holding `credits` and one team: what the CLI then acts on. */
export const userWithTeam = (env: Record<string, string>, server: ServerProcess, credits: number) =>
  Effect.gen(function*() {
    const { token } = yield* createUserWithToken(env)
    const call = callsAs(server, token)
    const organization = (yield* call("POST", "/v1/organizations", { name: "Acme" })).body
    const team = (yield* call("POST", "/v1/teams", { organizationId: organization.id, name: "Social" })).body
    if (credits > 0) yield* grantCredits(env, organization.id, credits)
    return { token, call, organizationId: organization.id as string, teamId: team.id as string }
  })

/**
 * A server with webhooks costing a credit each and allowed to this machine. The server knows its address
 * (PUBLIC_URL): a webhook gets a post's media as links to it.
 */
const publishingServer = (settings: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const env = publishEnv(yield* freshDatabaseEnv, { PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, ...settings })
    return { env, server: yield* startServer(env) }
  })

/**
 * One server of `publishing` for the tests of a file, which each act as users of their own: a server process
 * costs seconds of CPU to start, a user a request.
 */
export class FileServer extends Context.Tag("test/CliFileServer")<FileServer, Effect.Effect.Success<ReturnType<typeof publishingServer>>>() {
  static readonly Live = Layer.scoped(this, publishingServer())
}

/** The file's server (FileServer), with a receiver and a home for the CLI of the test's own. */
export const publishingOnFileServer = Effect.gen(function*() {
  const { env, server } = yield* FileServer
  const receiver = yield* makeWebhookReceiver
  const home = yield* scopedTempDir("postline-cli-home-")
  return { receiver, env, server, home }
})

/** A server of its own with these settings, a receiver, and a home for the CLI. */
export const publishing = (settings: Record<string, string> = {}) =>
  Effect.provideServiceEffect(publishingOnFileServer, FileServer, publishingServer(settings))
