// The Dockerfile, built and run for real without a Docker engine (support/DockerfileReplay.ts): its stages get
// what their COPY lines copy from the build context and nothing else, their RUN lines run in order (installs
// offline, from this machine's pnpm store), and the runtime stage's CMD starts the server, which its HEALTHCHECK
// must find healthy. A file the build needs and no COPY line copies fails here as it fails `docker build`.
// It touches no database of the suite's, so it runs in the embedded project only. Slow: it installs.
import { spawn } from "node:child_process"
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync } from "node:fs"
import { rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { Effect } from "effect"
import { afterAll, describe, expect, it } from "vitest"
// @ts-expect-error: a plain ESM build script, without types
import { externalPackages } from "../scripts/build.mjs"
import { type Instruction, replayDockerfile } from "./support/DockerfileReplay.js"
import { runCommand } from "./support/RunCommand.js"
import { freePort, serverDir } from "./support/ServerProcess.js"

const repository = Path.resolve(serverDir, "../..")
const read = (path: string) => readFileSync(Path.join(repository, path), "utf8")

/** The names under a node_modules folder, scoped ones as `@scope/name`; pnpm's own entries (`.pnpm`, ...) left out. */
const packagesIn = (modules: string) =>
  readdirSync(modules).filter((name) => !name.startsWith(".")).flatMap((name) =>
    name.startsWith("@") ? readdirSync(Path.join(modules, name)).map((scoped) => `${name}/${scoped}`) : [name]
  ).sort()

/** `HEALTHCHECK --interval=15s ... CMD [...]`: the command, and how long Docker waits before it calls it unhealthy. */
const healthcheckOf = (instruction: Instruction) => {
  const seconds = (name: string, fallback: number) =>
    Number(/^(\d+)s$/.exec(instruction.flags.find(([flag]) => flag === name)?.[1] ?? "")?.[1] ?? fallback)
  const command = JSON.parse(instruction.rest.replace(/^CMD\s+/, "")) as Array<string>
  const retries = seconds("retries", 3)
  return { command, giveUpAfterMs: (seconds("start-period", 0) + seconds("interval", 30) * retries) * 1000 }
}

/** Runs a command to its end: its exit code. */
const exitCodeOf = (command: Array<string>, cwd: string, env: Record<string, string>) =>
  new Promise<number | null>((resolve) => {
    const child = spawn(command[0]!, command.slice(1), { cwd, env, stdio: "ignore" })
    child.once("error", () => resolve(null))
    child.once("exit", (code) => resolve(code))
  })

describe.skipIf(process.env.TEST_DATABASE !== "embedded")("the Dockerfile, replayed without Docker", () => {
  const work = mkdtempSync(Path.join(tmpdir(), "postline-docker-"))
  // Thousands of installed files: removed without blocking the worker, in the time it takes.
  afterAll(() => rm(work, { recursive: true, force: true }))

  it("builds from what its COPY lines copy, installs only the bundle's external packages, and its CMD serves what its HEALTHCHECK checks", async () => {
    const log: Array<string> = []
    const stages = await replayDockerfile({
      repository,
      dockerfile: read("Dockerfile"),
      dockerignore: read(".dockerignore"),
      work,
      cache: (await runCommand("pnpm", ["store", "path"], { cwd: repository })).stdout.trim(),
      log: (line) => log.push(line)
    })
    const runtime = [...stages.values()].at(-1)!
    const app = Path.join(runtime.root, runtime.workdir)

    // Only what the bundle loads from node_modules, linked within the folder (the image has no other stage's).
    const modules = Path.join(app, "node_modules")
    expect(packagesIn(modules)).toEqual([...externalPackages].sort())
    const stored = readdirSync(Path.join(modules, ".pnpm"))
    for (const bundled of ["effect@", "@effect+", "@aws-sdk+", "stripe@", "esbuild@", "typescript@"]) {
      expect(stored.filter((name) => name.startsWith(bundled)), bundled).toEqual([])
    }
    for (const name of packagesIn(modules)) {
      const path = Path.join(modules, name)
      if (lstatSync(path).isSymbolicLink()) expect(Path.isAbsolute(readlinkSync(path)), name).toBe(false)
    }
    const size = (await runCommand("du", ["-sm", "--apparent-size", modules])).stdout.split("\t")[0]
    console.info(`The runtime stage's node_modules: ${size} MB (${externalPackages.join(", ")} and theirs)`)
    // Each loads from the bundle's folder, native code and WebAssembly included.
    const dist = Path.join(app, "apps/server/dist")
    const loads = await runCommand(process.execPath, [
      "--input-type=module",
      "-e",
      `${externalPackages.map((name: string) => `await import(${JSON.stringify(name)})`).join(";")}; console.log("loaded")`
    ], { cwd: dist })
    expect(loads.stdout + loads.stderr).toBe("loaded\n")

    // Started as the image starts it: CMD in WORKDIR, the ENV lines' variables (the data folder the stage's),
    // on a free port; the HEALTHCHECK's command called until it passes, as Docker does within its bounds.
    const cmd = JSON.parse(runtime.instructions.findLast(({ keyword }) => keyword === "CMD")!.rest) as Array<string>
    const healthcheck = healthcheckOf(runtime.instructions.findLast(({ keyword }) => keyword === "HEALTHCHECK")!)
    const port = await Effect.runPromise(freePort)
    const env = { ...runtime.env, PATH: `${Path.dirname(process.execPath)}:/usr/bin:/bin`, HOME: Path.join(work, "home"), PORT: String(port) }
    expect(cmd[0]).toBe("node")
    const server = spawn(process.execPath, cmd.slice(1), { cwd: app, env, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    server.stdout.on("data", (chunk: Buffer) => (output += chunk))
    server.stderr.on("data", (chunk: Buffer) => (output += chunk))
    const exited = new Promise<number | null>((resolve) => server.once("exit", (code) => resolve(code)))
    try {
      const givesUpAt = Date.now() + healthcheck.giveUpAfterMs
      let healthy = false
      while (!healthy && server.exitCode === null && Date.now() < givesUpAt) {
        healthy = await exitCodeOf(healthcheck.command, app, env) === 0
        if (!healthy) await new Promise((wait) => setTimeout(wait, 1000))
      }
      expect(healthy, `the HEALTHCHECK never passed; the server said:\n${output}`).toBe(true)
    } finally {
      server.kill("SIGTERM")
      await exited
    }
    expect(await exited, output).toBe(0)
  }, 900_000)
})
