import { describe, expect, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { folderGraph, knots, lineCount, sourceFiles } from "./support/SourceTree.js"

const repository = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../../..")
const serverSource = Path.join(repository, "apps/server/src")

/** The source folders whose files are held to the size of one job; migrations are a record, never edited. */
const sourceFolders = ["apps/server/src", "apps/cli/src", "packages/domain/src", "packages/mcp/src", "packages/sdk/src"]
const isMigration = (file: string) => file.startsWith("apps/server/src/Database/migrations/")
const longestFile = 300

/** The README's tree of the server's sources: each `src/…` entry with the file names its lines give. */
const layoutEntries = () => {
  const readme = readFileSync(Path.join(repository, "README.md"), "utf8")
  const section = readme.split("\n## Project layout\n")[1]!.split("\n```\n")[1]!
  const entries: Array<{ readonly path: string; names: Array<string> }> = []
  let current: { readonly path: string; names: Array<string> } | undefined
  for (const line of section.split("\n")) {
    const entry = /^ {2}(src\/\S+?)[,\s]/.exec(`${line} `)
    if (entry) entries.push(current = { path: entry[1]!, names: [] })
    else if (!/^ {4,}\S/.test(line)) current = undefined
    if (current) current.names.push(...[...line.matchAll(/\b([A-Z]?\w+\.ts)\b/g)].map((match) => match[1]!))
  }
  return entries
}

describe("the code's architecture", () => {
  it("no import knot of the server's folders holds more than two of them", () => {
    const larger = knots(folderGraph(serverSource)).filter((knot) => knot.length > 2)
    expect(larger).toEqual([])
  })

  it("the knot counter finds a knot, and only a real one", () => {
    const graph = new Map([["A/", new Set(["B/"])], ["B/", new Set(["C/"])], ["C/", new Set(["A/"])], ["D/", new Set(["A/"])]])
    expect(knots(graph).map((knot) => knot.join(" ")).sort()).toEqual(["A/ B/ C/", "D/"])
  })

  it(`no source file is over ${longestFile} lines, outside the migrations`, () => {
    const tooLong = sourceFolders.flatMap((folder) =>
      sourceFiles(Path.join(repository, folder))
        .map((file) => Path.join(folder, file))
        .filter((file) => !isMigration(file))
        .map((file) => ({ file, lines: lineCount(Path.join(repository, file)) }))
        .filter(({ lines }) => lines > longestFile)
    )
    expect(tooLong).toEqual([])
  })

  it("the README's project layout names every folder of the server's sources, and only files that exist", () => {
    const entries = layoutEntries()
    const folders = readdirSync(serverSource, { withFileTypes: true }).filter((entry) => entry.isDirectory())
      .map((entry) => `src/${entry.name}/`)
    expect(entries.filter(({ path }) => path.endsWith("/")).map(({ path }) => path).sort()).toEqual(folders.sort())
    const topFiles = readdirSync(serverSource).filter((name) => name.endsWith(".ts"))
    const named = entries.filter(({ path }) => !path.endsWith("/")).flatMap(({ names }) => names)
    expect([...new Set(named)].sort(), "the top-level files the layout names").toEqual(topFiles.sort())
    const missing = entries.filter(({ path }) => path.endsWith("/")).flatMap(({ names, path }) => {
      const inFolder = new Set(sourceFiles(Path.join(serverSource, path.slice("src/".length))).map((file) => Path.basename(file)))
      return names.filter((name) => !inFolder.has(name)).map((name) => `${path}${name}`)
    })
    expect(missing, "files the layout names that are not in their folder").toEqual([])
    expect(existsSync(Path.join(serverSource, "Database/migrations"))).toBe(true)
  })

  it("every Conflict, PaymentRequired and BadRequest the server makes names its reason", () => {
    const refusals = sourceFiles(serverSource).flatMap((file) => refusalsIn(readFileSync(Path.join(serverSource, file), "utf8"))
      .map(({ line, text }) => ({ at: `src/${file}:${line}`, text })))
    expect(refusals.length).toBeGreaterThan(50)
    // `reason: …`, or `reason` written short; a message's own word "reason" does not count.
    expect(refusals.filter(({ text }) => !/\breason\s*:|[{,]\s*reason\s*[,}]/.test(text))).toEqual([])
  })
})

/** Each `new Conflict(…)`, `new PaymentRequired(…)` and `new BadRequest(…)` of a source, with its arguments. */
const refusalsIn = (source: string) =>
  [...source.matchAll(/\bnew (Conflict|PaymentRequired|BadRequest)\(/g)].map((match) => {
    let depth = 0
    let end = match.index + match[0].length - 1
    for (; end < source.length; end++) {
      if (source[end] === "(") depth++
      else if (source[end] === ")" && --depth === 0) break
    }
    return { line: source.slice(0, match.index).split("\n").length, text: source.slice(match.index, end + 1) }
  })
