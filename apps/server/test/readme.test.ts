// The README's walkthroughs ("## Your first post", which opens it, and "## Using the API" with its subsections),
// each run as a reader would run it: its ```sh blocks, in order, in one bash session of its own started from an
// empty environment, against a server that the walkthrough itself starts with `pnpm start`.
//
// Which blocks run: those fenced ```sh in that section. Blocks fenced ```console are shown to the reader and
// never run: they need what a fresh machine lacks (a Bluesky or Mastodon account, a PostgreSQL server). Other
// info strings (```ts) are not shell.
//
// How they run: one bash script, `set -e -u -o pipefail` (so a variable never assigned fails too), each
// command's stdout and stderr captured on its own. It needs bash, curl and node, as the README says. A `pnpm`
// first on PATH runs this test run's bundle: `pnpm [-s] admin …` is `node <bundle>/admin.js …` and
// `pnpm [-s] start` is `exec node <pnpm start's flags> <bundle>/main.js` (the real ones build first when the
// sources changed, then run the same files; being exec'd, the server is the job that the walkthrough's
// `kill %1` stops, as it is in a reader's interactive shell, where `kill %1` signals the job's process group).
// The environment holds only PATH, HOME, HOST=127.0.0.1, and what the walkthrough lets a reader choose:
// POSTLINE (the server's address), PORT and RECEIVER_PORT (free ports), and DATA_DIR (a new folder, so that the
// installation is new). The session's folder is an empty temporary one. Whatever it leaves running is killed
// with its process group at the end.
//
// What is checked: every command exits with 0 (a failing one stops the run, and the failure names its block
// and command); a command that prints anything on stdout is followed by an output comment; and the output
// matches that comment by these rules:
//
// - An output comment is the `#` line right after a command, when its text begins with `{`, `[` or a
//   three-digit HTTP status; it continues on the next `#` lines until its JSON closes. Other `#` lines are
//   prose.
// - `# 201 {…}`: the output begins with the status, as `curl -i` shows it (status line, headers, blank line,
//   body) or as `curl -o /dev/null -w '%{http_code}\n'` does (the code alone); the body follows. `# 204`, a
//   status alone: no body.
// - The rest is JSON in which `…` may stand:
//   - inside a string, for any text: `"…"` is any string, `"plt_…"` a string that begins with `plt_`,
//     `"http://…/l/…"` one with those literal parts in that order; a string without `…` must be equal;
//   - alone as a member of an object (`{"id":"…",…}`): more members may follow. Without it, the object has
//     exactly the keys listed. The keys listed must be present, in any order;
//   - alone as an element of an array: any number of elements (none included) in its place; the elements
//     before it match the array's first ones, those after it the last ones. Without it, the array has exactly
//     the elements listed, in that order;
//   - alone as a value (`"lastUsedAt":…`): any value, of any type.
// - Types must match; numbers, booleans and null must be equal.
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { bundled, freePort, startFlags } from "./support/ServerProcess.js"
import {
  mismatches,
  outputProblems,
  parseShape,
  splitCommands,
  type WalkthroughBlock,
  walkthroughBlocks
} from "./support/ReadmeWalkthrough.js"

const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8")

/** Single quotes for bash: the text as one word, unchanged. */
const quoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`

/** `pnpm` as the walkthrough uses it, on this test run's bundle. */
const pnpmShim = (bundle: string) => `#!/usr/bin/env bash
[ "$1" = "-s" ] && shift
case "$1" in
  admin) shift; exec node ${quoted(Path.join(bundle, "admin.js"))} "$@" ;;
  start) shift; exec node ${startFlags.map(quoted).join(" ")} ${quoted(Path.join(bundle, "main.js"))} "$@" ;;
  *) echo "pnpm $*: the README's walkthrough runs only pnpm admin and pnpm start" >&2; exit 127 ;;
esac
`

/** The script: each command in a `{ …; }` of its own (the shell's own variables and jobs stay), outputs to files. */
const script = (blocks: ReadonlyArray<WalkthroughBlock>, outputs: string) =>
  [
    "set -e -u -o pipefail",
    ...blocks.flatMap((block, b) =>
      block.commands.flatMap((command, c) => [
        `echo ${b}.${c} > ${quoted(Path.join(outputs, "current"))}`,
        `{ ${command.text}\n} > ${quoted(Path.join(outputs, `${b}.${c}.out`))} 2> ${quoted(Path.join(outputs, `${b}.${c}.err`))}`
      ])
    ),
    `echo done > ${quoted(Path.join(outputs, "current"))}`
  ].join("\n")

/** How long the whole walkthrough may take (it takes about 20 s): then it is stopped where it is. */
const walkthroughTimeoutMs = 150_000

interface Run {
  readonly exitCode: number | null
  readonly timedOut: boolean
  readonly folder: string
  readonly outputs: string
}

/** Runs the walkthrough in bash and stops whatever it left running (the server, the receiver) when it ends. */
const runWalkthrough = (blocks: ReadonlyArray<WalkthroughBlock>) =>
  Effect.gen(function*() {
    const [port, receiverPort] = [yield* freePort, yield* freePort]
    const folder = mkdtempSync(Path.join(tmpdir(), "postline-readme-"))
    const [work, bin, outputs] = ["work", "bin", "outputs"].map((name) => Path.join(folder, name))
    for (const path of [work, bin, outputs]) mkdirSync(path)
    writeFileSync(Path.join(bin, "pnpm"), pnpmShim(Path.dirname(bundled("main"))))
    chmodSync(Path.join(bin, "pnpm"), 0o755)
    writeFileSync(Path.join(folder, "walkthrough.sh"), script(blocks, outputs))
    const child: ChildProcess = spawn("bash", [Path.join(folder, "walkthrough.sh")], {
      cwd: work,
      detached: true, // a process group of its own: the server and the receiver it starts go with it
      stdio: "ignore",
      env: {
        PATH: [bin, Path.dirname(process.execPath), process.env.PATH ?? ""].join(":"),
        HOME: work,
        POSTLINE: `http://127.0.0.1:${port}`,
        PORT: String(port),
        HOST: "127.0.0.1",
        RECEIVER_PORT: String(receiverPort),
        DATA_DIR: Path.join(folder, "data")
      }
    })
    const killGroup = () => {
      try {
        process.kill(-child.pid!, "SIGKILL")
      } catch {
        // nothing left
      }
    }
    let timedOut = false
    const timer = setTimeout(() => (timedOut = true, killGroup()), walkthroughTimeoutMs)
    const exitCode = yield* Effect.promise(() => new Promise<number | null>((done) => child.once("exit", done)))
    clearTimeout(timer)
    // What the walkthrough left running (it stops its own server at its end, unless it failed before).
    killGroup()
    return { exitCode, folder, outputs, timedOut } satisfies Run
  })

const describeCommand = (blocks: ReadonlyArray<WalkthroughBlock>, b: number, c: number) => {
  const block = blocks[b]!
  const command = block.commands[c]!
  return `block ${b + 1} of the walkthrough (README line ${block.line}, ${block.section}), command on line ${command.line}:\n` +
    command.text
}

/** Runs `blocks` and fails with the command that failed, or with every command whose output is not its comment's. */
const checkWalkthrough = (blocks: ReadonlyArray<WalkthroughBlock>) =>
  Effect.runPromise(Effect.gen(function*() {
    const run = yield* runWalkthrough(blocks)
    const read = (name: string) => {
      try {
        return readFileSync(Path.join(run.outputs, name), "utf8")
      } catch {
        return ""
      }
    }
    const serverLog = () => {
      const log = read("../work/postline.log")
      return log === "" ? "" : `\nThe server's log (postline.log), its end:\n${log.split("\n").slice(-15).join("\n")}`
    }
    const current = read("current").trim()
    if (current !== "done") {
      const [b, c] = current.split(".").map(Number) as [number, number]
      expect.fail(
        `${describeCommand(blocks, b, c)}\n` +
          (run.timedOut ? `did not end: the walkthrough was stopped after ${walkthroughTimeoutMs / 1000} s.\n` : `failed (bash exited with ${run.exitCode}).\n`) +
          `stdout: ${read(`${b}.${c}.out`)}\nstderr: ${read(`${b}.${c}.err`)}${serverLog()}\n(the run's files are kept in ${run.folder})`
      )
    }
    const problems = blocks.flatMap((block, b) =>
      block.commands.flatMap((command, c) => {
        const stdout = read(`${b}.${c}.out`)
        const found = command.expected === undefined
          ? stdout.trim() === "" ? [] : [`it printed ${JSON.stringify(stdout.slice(0, 300))} but has no output comment`]
          : outputProblems(command.expected, stdout)
        return found.length === 0 ? [] : [`${describeCommand(blocks, b, c)}\n  ${found.join("\n  ")}`]
      })
    )
    if (problems.length > 0) expect.fail(`${problems.length} command(s) answered otherwise than their comments say:\n\n${problems.join("\n\n")}`)
    rmSync(run.folder, { recursive: true, force: true })
  }))

describe.skipIf(process.env.TEST_DATABASE !== "embedded")("the README's walkthrough", () => {
  it("opens the README with a first post of under 15 lines, which runs as written and arrives", () => {
    const headings = readme.split("\n").filter((line) => line.startsWith("## "))
    expect(headings[0]).toBe("## Your first post")
    const blocks = walkthroughBlocks(readme, "Your first post")
    expect(blocks).toHaveLength(1)
    const blockLength = readme.split("\n").slice(blocks[0]!.line).indexOf("```")
    expect(blockLength).toBeLessThan(15)
    return checkWalkthrough(blocks)
  })

  it("runs as written, and every command answers as its comment says", () => {
    const blocks = walkthroughBlocks(readme)
    expect(blocks.length).toBeGreaterThan(5)
    return checkWalkthrough(blocks)
  })
})

describe.skipIf(process.env.TEST_DATABASE !== "embedded")("output comments", () => {
  const matches = (comment: string, value: unknown) => mismatches(parseShape(comment), value)

  it("compare strings by their literal parts around …", () => {
    expect(matches(`"…"`, "anything")).toEqual([])
    expect(matches(`"plt_…"`, "plt_abc")).toEqual([])
    expect(matches(`"plt_…"`, "plk_abc")).toHaveLength(1)
    expect(matches(`"http://…/l/…"`, "http://localhost:3000/l/abc")).toEqual([])
    expect(matches(`"http://…/l/…"`, "http://localhost:3000/x/abc")).toHaveLength(1)
    expect(matches(`"Acme"`, "Acme Inc")).toHaveLength(1)
    expect(matches(`"…"`, 3)).toHaveLength(1)
  })

  it("list the keys an object has, all of them unless … says more may follow", () => {
    expect(matches(`{"id":"…","name":"Acme"}`, { id: "1", name: "Acme" })).toEqual([])
    expect(matches(`{"id":"…","name":"Acme"}`, { id: "1", name: "Acme", extra: 1 })).toEqual([
      "$: keys the comment does not list (end it with …, if more may follow): extra"
    ])
    expect(matches(`{"id":"…",…}`, { id: "1", extra: 1 })).toEqual([])
    expect(matches(`{"id":"…",…}`, { name: "Acme" })).toHaveLength(1)
    expect(matches(`{…}`, {})).toEqual([])
    expect(matches(`{…}`, [])).toHaveLength(1)
    expect(matches(`{"lastUsedAt":…}`, { lastUsedAt: null })).toEqual([])
  })

  it("match an array's first and last elements around …", () => {
    expect(matches(`[1,2]`, [1, 2])).toEqual([])
    expect(matches(`[1,2]`, [1, 2, 3])).toHaveLength(1)
    expect(matches(`[1,…]`, [1, 2, 3])).toEqual([])
    expect(matches(`[1,…]`, [1])).toEqual([])
    expect(matches(`[…,3]`, [1, 2, 3])).toEqual([])
    expect(matches(`[1,…,3]`, [1, 3])).toEqual([])
    expect(matches(`[1,…,3]`, [1, 2])).toEqual(["$[1]: expected 3, got 2"])
    expect(matches(`[{"status":"published",…},…]`, [{ status: "failed", id: 1 }])).toEqual([
      "$[0].status: expected \"published\", got \"failed\""
    ])
  })

  it("compare types, numbers, booleans and null exactly", () => {
    expect(matches(`{"total":1,"ok":true,"next":null}`, { total: 1, ok: true, next: null })).toEqual([])
    expect(matches(`{"total":1}`, { total: "1" })).toHaveLength(1)
    expect(matches(`{"next":null}`, { next: "x" })).toHaveLength(1)
    expect(matches(`{"ok":true}`, { ok: false })).toHaveLength(1)
  })

  it("read a status from curl -i or -w, and a status alone means no body", () => {
    const [command] = splitCommands(["curl -si x", "# 201 {\"id\":\"…\",", "#  …}"], 1)
    expect(command!.expected).toMatchObject({ status: 201 })
    const response = "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\n\r\n{\"id\":\"a\",\"name\":\"b\"}"
    expect(outputProblems(command!.expected!, response)).toEqual([])
    expect(outputProblems(command!.expected!, response.replace("201 Created", "200 OK"))).toHaveLength(1)
    expect(outputProblems(command!.expected!, "{\"id\":\"a\"}")).toHaveLength(1)
    const [bare] = splitCommands(["curl -s -o /dev/null -w '%{http_code}\\n' x", "# 206"], 1)
    expect(outputProblems(bare!.expected!, "206\n")).toEqual([])
    expect(outputProblems(bare!.expected!, "200\n")).toHaveLength(1)
  })

  it("split a block into commands: continued lines, quotes over lines, prose comments", () => {
    const commands = splitCommands([
      "# prose",
      "A=$(echo '{\"a\":1}' \\",
      "  | cat)",
      "node -e 'one",
      "  two' x   # a trailing comment",
      "# {\"a\":1}",
      "# the next line is prose, not output",
      "# [1]"
    ], 10)
    expect(commands.map(({ line, text }) => [line, text])).toEqual([
      [11, "A=$(echo '{\"a\":1}' \\\n  | cat)"],
      [13, "node -e 'one\n  two' x   # a trailing comment"]
    ])
    expect(commands[1]!.expected?.comment).toBe("{\"a\":1}")
  })

  it("find the walkthrough's blocks: ```sh runs, ```console does not", () => {
    const blocks = walkthroughBlocks(
      ["# T", "```sh", "skipped", "```", "## Using the API", "```sh", "echo 1", "# 1", "```", "### More", "```console",
        "shown", "```", "```sh", "echo 2", "```", "## Next", "```sh", "after", "```"].join("\n")
    )
    expect(blocks.map(({ commands, section }) => [section, commands.map(({ text }) => text)])).toEqual([
      ["Using the API", ["echo 1"]],
      ["Using the API > More", ["echo 2"]]
    ])
  })
})

const repository = new URL("../../../", import.meta.url).pathname

interface LayoutEntry {
  /** From the repository's folder: `apps/server/src/Access/`, `apps/server/src/main.ts`, `packages/sdk`. */
  readonly path: string
  /** The entry's words after its path, its continued lines included; empty for an unindented one. */
  readonly text: string
  readonly line: number
}

/**
 * The entries of the README's "## Project layout": a line that begins unindented names a folder of the repository
 * (`apps/server`), an indented one that begins with a path names a file or folder inside it (`src/Access/`), and a
 * more indented one continues the entry before it.
 */
const layoutEntries = (text: string): Array<LayoutEntry> => {
  const lines = text.split("\n")
  const start = lines.indexOf("## Project layout")
  const end = lines.findIndex((line, index) => index > start && /^## /.test(line))
  const entries: Array<LayoutEntry> = []
  let top = ""
  for (let index = start + 1; index < end; index++) {
    const line = lines[index]!
    if (line.startsWith("```") || line.trim() === "") continue
    const first = line.trim().split(/\s+/)[0]!.replace(/,$/, "")
    if (!line.startsWith(" ")) {
      top = first
      entries.push({ path: top, text: "", line: index + 1 })
    } else if (/^ {2}\S/.test(line) && /[/.]/.test(first)) {
      entries.push({ path: Path.join(top, first), text: line.trim().slice(first.length), line: index + 1 })
    } else if (entries.length > 0 && /^ {2}/.test(line)) {
      const last = entries.pop()!
      entries.push({ ...last, text: `${last.text}\n${line}` })
    }
  }
  return entries
}

// A file named in an entry's words (`Repo.ts`), not part of a path or a pattern (`scripts/build.mjs`, `*-browser.test.ts`).
const namedFiles = (text: string) => Array.from(text.matchAll(/(?<![\w.*/-])[A-Za-z]\w*\.(?:ts|mjs)\b/g), ([name]) => name)

describe.skipIf(process.env.TEST_DATABASE !== "embedded")("the README's Project layout", () => {
  const entries = layoutEntries(readme)
  const folders = (path: string) =>
    readdirSync(Path.join(repository, path), { withFileTypes: true }).filter((entry) => entry.isDirectory()).map(({ name }) => name)

  it("names every folder of apps/server/src, every package and every app", () => {
    const named = new Set(entries.map(({ path }) => path.replace(/\/$/, "")))
    const missing = [
      ...folders("apps/server/src").map((name) => `apps/server/src/${name}`),
      ...folders("packages").map((name) => `packages/${name}`),
      ...folders("apps").map((name) => `apps/${name}`)
    ].filter((path) => !named.has(path))
    expect(missing).toEqual([])
  })

  it("names only files and folders that exist, the files in an entry's words included", () => {
    const absent = entries.flatMap(({ line, path, text }) => {
      const folder = path.endsWith("/") || !/\.\w+$/.test(path) ? path : Path.dirname(path)
      const files = namedFiles(text)
      return [path, ...files.map((file) => Path.join(folder, file))]
        .filter((candidate) => !existsSync(Path.join(repository, candidate)))
        .map((candidate) => `README line ${line}: ${candidate}`)
    })
    expect(entries.length).toBeGreaterThan(30)
    expect(absent).toEqual([])
  })
})
