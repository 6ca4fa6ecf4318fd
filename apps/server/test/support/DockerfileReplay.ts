// Replays a Dockerfile without a Docker engine: each stage is a folder standing for its file system, which gets
// exactly what the stage's COPY lines copy (from the build context: the repository's files as git lists them,
// less what .dockerignore excludes, or from an earlier stage's folder) and in which its RUN lines run, in order,
// with this machine's Node.js and the pnpm the Dockerfile installs. Absolute paths in RUN lines and ENV values
// are the stage folder's; a `--mount=type=cache` target is the machine's own store, and installs are offline
// (npm's cache first). Not emulated: the image's users (`chown` only checks that its files exist; everything
// runs as this user) and the base image (Node.js is this machine's, checked against the FROM line's version).
import { execFileSync, spawn } from "node:child_process"
import { chmodSync, cpSync, existsSync, mkdirSync, statSync, writeFileSync } from "node:fs"
import * as Path from "node:path"

export interface Instruction {
  readonly keyword: string
  /** `--name=value` flags (`--from`, `--mount`, `--interval`, ...) in order. */
  readonly flags: ReadonlyArray<readonly [string, string]>
  readonly rest: string
  readonly line: number
}

export interface Stage {
  readonly name: string
  readonly base: string
  readonly instructions: ReadonlyArray<Instruction>
}

/** The stages, with continuation lines joined, comments dropped and ARGs substituted as Docker does. */
export const parseDockerfile = (text: string): ReadonlyArray<Stage> => {
  const globalArgs = new Map<string, string>()
  const stages: Array<{ name: string; base: string; instructions: Array<Instruction>; args: Map<string, string> }> = []
  const logical: Array<{ text: string; line: number }> = []
  let pending: { text: string; line: number } | undefined
  text.split("\n").forEach((raw, index) => {
    const line = raw.trim()
    if (pending === undefined && (line === "" || line.startsWith("#"))) return
    if (pending !== undefined && line.startsWith("#")) return
    const joined = pending === undefined ? { text: "", line: index + 1 } : pending
    joined.text += `${joined.text === "" ? "" : " "}${line.replace(/\\$/, "").trim()}`
    pending = line.endsWith("\\") ? joined : undefined
    if (pending === undefined) logical.push(joined)
  })
  for (const { text: line, line: number } of logical) {
    const keyword = line.split(/\s/, 1)[0]!.toUpperCase()
    const current = stages.at(-1)
    // FROM lines see the ARGs declared before the first FROM; other lines, their stage's.
    const args = keyword === "FROM" ? globalArgs : current?.args ?? globalArgs
    const substituted = line.slice(keyword.length).trim()
      .replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced?: string, bare?: string) => args.get(braced ?? bare!) ?? whole)
    const flags: Array<readonly [string, string]> = []
    let rest = substituted
    for (let flag = /^--([\w-]+)=(\S+)\s*/.exec(rest); flag !== null; flag = /^--([\w-]+)=(\S+)\s*/.exec(rest)) {
      flags.push([flag[1]!, flag[2]!])
      rest = rest.slice(flag[0].length)
    }
    if (keyword === "ARG") {
      const [, name, value] = /^(\w+)(?:=(\S*))?$/.exec(rest)!
      // A stage's `ARG NAME` without a value takes the global default.
      args.set(name!, value ?? globalArgs.get(name!) ?? "")
    } else if (keyword === "FROM") {
      const [base, , name] = rest.split(/\s+/)
      stages.push({ name: name ?? String(stages.length), base: base!, instructions: [], args: new Map() })
    } else {
      if (current === undefined) throw new Error(`line ${number}: ${keyword} before FROM`)
      current.instructions.push({ keyword, flags, rest, line: number })
    }
  }
  return stages.map(({ args: _, ...stage }) => stage)
}

/** A .dockerignore's rule (Docker's patternmatcher): the last pattern matching a path or one of its parents wins. */
export const dockerignore = (text: string) => {
  const patterns = text.split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const negated = line.startsWith("!")
      const pattern = Path.posix.normalize((negated ? line.slice(1) : line).replace(/^\/+/, ""))
      const source = pattern.split("/").map((segment) =>
        segment === "**"
          ? "(?:.*)"
          : segment.replace(/[.+^${}()|\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]")
      ).join("/").replace(/\(\?:\.\*\)\//g, "(?:.*/)?")
      return { negated, regex: new RegExp(`^${source}$`) }
    })
  return (path: string) => {
    const segments = path.split("/")
    const candidates = segments.map((_, index) => segments.slice(0, index + 1).join("/"))
    let excluded = false
    for (const { negated, regex } of patterns) if (candidates.some((candidate) => regex.test(candidate))) excluded = !negated
    return !excluded
  }
}

/** The build context: the repository's files (tracked, or new and not git-ignored) that .dockerignore keeps. */
export const buildContext = (repository: string, ignore: string): ReadonlyArray<string> => {
  const keeps = dockerignore(ignore)
  return execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: repository, encoding: "utf8" })
    .split("\0").filter((path) => path !== "" && existsSync(Path.join(repository, path)) && keeps(path))
}

export interface Replayed {
  /** The stage's folder, which stands for its `/`. */
  readonly root: string
  readonly workdir: string
  readonly env: Record<string, string>
  readonly instructions: ReadonlyArray<Instruction>
}

export interface ReplayOptions {
  readonly repository: string
  readonly dockerfile: string
  readonly dockerignore: string
  /** An empty folder: the stages' folders go in it. */
  readonly work: string
  /** The machine's folder that a `--mount=type=cache` target stands for (the pnpm store). */
  readonly cache: string
  readonly log: (line: string) => void
}

/** A stage folder's path for a path of the image. */
const inStage = (root: string, path: string) => Path.join(root, path)

/** A RUN line as a shell command here: mount targets become the cache folder, other absolute paths the stage's. */
const localCommand = (command: string, root: string, mounts: ReadonlyArray<string>, cache: string) => {
  const placeholder = "\u0000cache\u0000"
  let local = command
  for (const target of mounts) local = local.split(target).join(placeholder)
  return local.replace(/(^|[\s=])\/(?=[\w.])/g, (_, before: string) => `${before}${root}/`).split(placeholder).join(cache)
}

/** Runs a shell command to its end (without blocking the test's process): its exit code and its output. */
const shell = (command: string, cwd: string, env: Record<string, string>) =>
  new Promise<{ readonly status: number | null; readonly output: string }>((resolve) => {
    const child = spawn("/bin/sh", ["-c", command], { cwd, env, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk))
    child.once("close", (status) => resolve({ status, output }))
  })

/** `chown` where nobody is root: its files must exist, their owner is this user. */
const chownShim = `#!/bin/sh
for path in "$@"; do case "$path" in -*) ;; *:*) ;; *) [ -e "$path" ] || { echo "chown: $path: no such file" >&2; exit 1; } ;; esac; done
`

export const replayDockerfile = async (options: ReplayOptions): Promise<Map<string, Replayed>> => {
  const stages = parseDockerfile(options.dockerfile)
  const context = buildContext(options.repository, options.dockerignore)
  const tools = Path.join(options.work, "tools")
  mkdirSync(tools, { recursive: true })
  writeFileSync(Path.join(tools, "chown"), chownShim)
  chmodSync(Path.join(tools, "chown"), 0o755)
  const replayed = new Map<string, Replayed>()

  for (const stage of stages) {
    const root = Path.join(options.work, `stage-${stage.name}`)
    const parent = replayed.get(stage.base)
    let workdir = parent?.workdir ?? "/"
    const env: Record<string, string> = { ...parent?.env }
    if (parent !== undefined) cpSync(parent.root, root, { recursive: true, verbatimSymlinks: true })
    else {
      const image = /^node:(\d+)(\.\d+\.\d+)?/.exec(stage.base)
      if (image === null) throw new Error(`FROM ${stage.base}: only Node.js's images and earlier stages are replayed`)
      const version = `${image[1]}${image[2] ?? ""}`
      if (!`${process.versions.node}.`.startsWith(`${version}.`)) {
        throw new Error(`FROM ${stage.base}: this machine's Node.js is ${process.versions.node}`)
      }
      mkdirSync(root, { recursive: true })
    }
    for (const instruction of stage.instructions) {
      const where = `stage ${stage.name}, line ${instruction.line}: ${instruction.keyword} ${instruction.rest}`
      options.log(where)
      const here = inStage(root, workdir)
      switch (instruction.keyword) {
        case "WORKDIR":
          workdir = Path.posix.resolve(workdir, instruction.rest)
          mkdirSync(inStage(root, workdir), { recursive: true })
          break
        case "ENV":
          for (const [, name, value] of instruction.rest.matchAll(/(\w+)=(\S+)/g)) {
            env[name!] = value!.startsWith("/") ? inStage(root, value!) : value!
          }
          break
        case "COPY": {
          const from = instruction.flags.find(([name]) => name === "from")?.[1]
          const words = instruction.rest.split(/\s+/)
          const destination = Path.posix.resolve(workdir, words.at(-1)!)
          const sources = words.slice(0, -1)
          const intoFolder = words.at(-1)!.endsWith("/") || sources.length > 1
          for (const source of sources) {
            if (from !== undefined) {
              const stageRoot = replayed.get(from)?.root
              if (stageRoot === undefined) throw new Error(`${where}: no earlier stage ${from}`)
              const path = inStage(stageRoot, source)
              if (!existsSync(path)) throw new Error(`${where}: ${source} is not in stage ${from}`)
              const target = statSync(path).isDirectory() || !intoFolder
                ? inStage(root, destination)
                : inStage(root, Path.posix.join(destination, Path.basename(source)))
              cpSync(path, target, { recursive: true, verbatimSymlinks: true })
              continue
            }
            const prefix = Path.posix.normalize(source).replace(/\/$/, "")
            const files = prefix === "." ? context : context.filter((file) => file === prefix || file.startsWith(`${prefix}/`))
            if (files.length === 0) throw new Error(`${where}: ${source} is not in the build context`)
            for (const file of files) {
              const relative = file === prefix ? (intoFolder ? Path.basename(file) : "") : file.slice(prefix === "." ? 0 : prefix.length + 1)
              const target = inStage(root, Path.posix.join(destination, relative))
              mkdirSync(Path.dirname(target), { recursive: true })
              cpSync(Path.join(options.repository, file), target)
            }
          }
          break
        }
        case "RUN": {
          const mounts = instruction.flags.filter(([name]) => name === "mount")
            .map(([, value]) => Object.fromEntries(value.split(",").map((part) => part.split("=") as [string, string])))
          if (mounts.some((mount) => mount.type !== "cache")) throw new Error(`${where}: only cache mounts are replayed`)
          const command = localCommand(instruction.rest, root, mounts.map((mount) => mount.target!), options.cache)
          const ran = await shell(command, here, {
            ...env,
            PATH: [Path.join(root, "usr/local/bin"), tools, Path.dirname(process.execPath), "/usr/bin", "/bin"].join(":"),
            HOME: inStage(root, "root"),
            // `npm install --global` into the stage; npm from its cache, pnpm from the store alone.
            npm_config_prefix: inStage(root, "usr/local"),
            npm_config_cache: Path.join(process.env.HOME ?? "/root", ".npm"),
            npm_config_prefer_offline: "true",
            npm_config_offline: command.includes("pnpm install") ? "true" : "false"
          })
          if (ran.status !== 0) throw new Error(`${where}: exited with ${ran.status}\n${ran.output}`)
          break
        }
        case "USER":
        case "EXPOSE":
        case "VOLUME":
        case "HEALTHCHECK":
        case "CMD":
        case "ARG":
          break
        default:
          throw new Error(`${where}: not replayed`)
      }
    }
    replayed.set(stage.name, { root, workdir, env, instructions: stage.instructions })
  }
  return replayed
}
