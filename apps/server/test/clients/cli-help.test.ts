import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort } from "../support/ServerProcess.js"
import { jsonOf, runCli } from "../support/CliProcess.js"
import { scopedTempDir } from "../support/TestDatabase.js"

/** The commands `postline --help` lists, as their words: `accounts connect`, `context use`, `mcp`, … */
const commandsOf = (help: string) =>
  help.slice(help.indexOf("COMMANDS"), help.indexOf("EXIT CODES")).split("\n")
    .filter((line) => line.startsWith("  - "))
    .map((line) => {
      const usage = line.slice(4).split(/\s{2,}/)[0]!.replace(/\[[^\]]*\]/g, " ")
      const words: Array<string> = []
      for (const word of usage.split(/\s+/).filter((word) => word !== "")) {
        if (!/^[a-z][a-z-]*$/.test(word)) break
        words.push(word)
      }
      return words
    })

interface HelpEntry {
  /** `--account id...`, `(-y, --yes)`, `<postId>` */
  readonly heading: string
  readonly paragraphs: ReadonlyArray<string>
}

/** The entries of a help page's ARGUMENTS and OPTIONS: each heading with the paragraphs indented under it. */
const entriesOf = (help: string): ReadonlyArray<HelpEntry> => {
  const entries: Array<{ heading: string; paragraphs: Array<string> }> = []
  let section = ""
  for (const line of help.split("\n")) {
    if (/^[A-Z][A-Z ]+$/.test(line)) section = line
    else if (section === "ARGUMENTS" || section === "OPTIONS") {
      if (/^\S/.test(line)) entries.push({ heading: line.trim(), paragraphs: [] })
      else if (line.trim() !== "") entries.at(-1)?.paragraphs.push(line.trim())
    }
  }
  return entries
}

const optional = (entry: HelpEntry) =>
  entry.paragraphs.some((paragraph) => paragraph.startsWith("This setting is optional") || paragraph.includes("zero or more times"))

// @effect/cli's own sentence for a value's type, which said nothing of the option.
const typeSentences = ["A user-defined piece of text.", "A true or false value.", "An integer."]

describe("postline's help and its words for an unreachable server", () => {
  it.live("helps without colour codes off a terminal, each option and argument with its own description, optional ones in brackets", () =>
    Effect.gen(function*() {
      const env = { PATH: process.env.PATH ?? "" }
      const root = yield* runCli(["--help"], env)
      expect(root.code).toBe(0)
      const commands = commandsOf(root.stdout)
      expect(commands).toContainEqual(["post-now"])
      expect(commands).toContainEqual(["accounts", "connect"])
      for (const command of [[], ...commands]) {
        const help = command.length === 0 ? root : yield* runCli([...command, "--help"], env)
        const name = `postline ${command.join(" ")} --help`
        expect(help.code, name).toBe(0)
        expect(help.stdout.includes("\u001b["), `${name} writes colour codes to a pipe`).toBe(false)
        const entries = entriesOf(help.stdout)
        const usage = help.stdout.split("\n").find((line) => line.startsWith("$ ")) ?? ""
        for (const entry of entries) {
          const what = `${name}: ${entry.heading}`
          expect(entry.paragraphs.filter((paragraph) => typeSentences.includes(paragraph)), what).toEqual([])
          expect(entry.paragraphs[0] ?? "", what).not.toMatch(/^(This setting|This option|$)/)
          if (optional(entry)) expect(usage, what).toContain(`[${entry.heading}]`)
        }
      }
      const publish = entriesOf((yield* runCli(["post-now", "--help"], env)).stdout)
      expect(publish.map(({ heading }) => heading)).toEqual(expect.arrayContaining(["<postId>", "--account id...", "(-y, --yes)"]))

      // A command line refused: @effect/cli's words, without colour codes too.
      const refused = yield* runCli(["posts", "create"], env)
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain("--text")
      expect(refused.stderr.includes("\u001b[")).toBe(false)
    }))

  it.scopedLive("names the server it could not reach, where its address came from, and how to name another", () =>
    Effect.gen(function*() {
      const home = yield* scopedTempDir("postline-cli-home-")
      // A port nobody listens on, and a host that cannot resolve.
      const closed = `http://127.0.0.1:${yield* freePort}`
      const env = { PATH: process.env.PATH ?? "", HOME: home, POSTLINE_TOKEN: "plt_unused" }

      const fromEnv = yield* runCli(["whoami"], { ...env, POSTLINE_URL: closed })
      expect(fromEnv.code).toBe(1)
      expect(fromEnv.stderr).toBe(
        `Error (ServerUnreachable): Could not reach the Postline server at ${closed} (from POSTLINE_URL): ` +
          `connect ECONNREFUSED ${closed.slice("http://".length)}. Check that it runs there, or name the server with ` +
          "--url <address> or the POSTLINE_URL environment variable\n"
      )

      const fromFlag = yield* runCli(["orgs", "--url", "http://postline.invalid", "--json"], { ...env, POSTLINE_URL: closed })
      expect(fromFlag.code).toBe(1)
      expect(jsonOf(fromFlag)).toEqual({
        error: {
          _tag: "ServerUnreachable",
          message: expect.stringMatching(
            /^Could not reach the Postline server at http:\/\/postline\.invalid \(given with --url\): getaddrinfo \w+ postline\.invalid\. .*--url <address> or the POSTLINE_URL/
          )
        }
      })

      // The device login makes its own requests: its first one says so too.
      const login = yield* runCli(["login", "--url", closed], env)
      expect(login.code).toBe(1)
      expect(login.stderr).toContain(`Error (ServerUnreachable): Could not reach the Postline server at ${closed} (given with --url)`)
    }))
})
