// `pnpm install` with the repository's own settings (.npmrc, package.json), as a fresh clone runs it: a refused
// install says why and a good one shows what it did (issue 34: `reporter=silent` exited 1 with no word on
// Node.js 20). No database: it runs in the embedded project only.
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { runCommand } from "./support/RunCommand.js"
import { serverDir } from "./support/ServerProcess.js"

const repository = Path.resolve(serverDir, "../..")
const folders: Array<string> = []
afterEach(() => folders.splice(0).forEach((folder) => rmSync(folder, { recursive: true, force: true })))

/** A folder holding the repository's .npmrc and the given package.json, where pnpm installs offline. */
const install = async (manifest: string, env: Record<string, string> = {}) => {
  const folder = mkdtempSync(Path.join(tmpdir(), "postline-install-"))
  folders.push(folder)
  copyFileSync(Path.join(repository, ".npmrc"), Path.join(folder, ".npmrc"))
  writeFileSync(Path.join(folder, "package.json"), manifest)
  const ran = await runCommand("pnpm", ["install", "--offline"], { cwd: folder, env: { ...process.env, ...env } })
  return { status: ran.status, output: `${ran.stdout}${ran.stderr}` }
}

describe.skipIf(process.env.TEST_DATABASE !== "embedded")("pnpm install with the repository's settings", () => {
  it("says why it refuses a Node.js older than package.json's engines", async () => {
    // pnpm checks engines against `node-version` when it is set: Node.js 20, as a fresh machine may have.
    const refused = await install(readFileSync(Path.join(repository, "package.json"), "utf8"), { npm_config_node_version: "20.19.0" })
    expect(refused.status).toBe(1)
    expect(refused.output).toContain("ERR_PNPM_UNSUPPORTED_ENGINE")
    expect(refused.output).toMatch(/Expected version: >=24\s+Got: 20\.19\.0/)
  })

  it("shows what a good install did", async () => {
    const installed = await install(JSON.stringify({ name: "fresh-clone", private: true }))
    expect(installed.status, installed.output).toBe(0)
    expect(installed.output).toMatch(/Done in [\d.]+m?s using pnpm/)
  })

  it("is quieted only where the README reads a script's output: there it runs `pnpm -s`", () => {
    const readme = readFileSync(Path.join(repository, "README.md"), "utf8")
    const shell = [...readme.matchAll(/^```(?:sh|bash|console)\n([\s\S]*?)^```$/gm)].flatMap(([, block]) => block!.split("\n"))
    // `$(pnpm …)`, or `pnpm … | …` (a pipe, not `||`).
    const readsOutput = shell.filter((line) => /\$\(pnpm |\bpnpm [^|#]*\|(?!\|)/.test(line))
    expect(readsOutput.length).toBeGreaterThan(0)
    expect(readsOutput.filter((command) => !/pnpm -s /.test(command))).toEqual([])
  })
})
