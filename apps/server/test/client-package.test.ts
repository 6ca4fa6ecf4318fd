import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { mkdirSync, readdirSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { createUserWithToken, serverDir, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir, testDatabaseKind } from "./support/TestDatabase.js"

const domainDir = Path.resolve(serverDir, "../../packages/domain")

/** Runs a command to its end; its exit code and its stdout and stderr together. */
const exec = (command: string, args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv = process.env) =>
  Effect.promise(() =>
    new Promise<{ readonly code: number | null; readonly output: string }>((resolve) => {
      const child = spawn(command, args, { cwd, env })
      let output = ""
      child.stdout.on("data", (chunk: Buffer) => (output += chunk))
      child.stderr.on("data", (chunk: Buffer) => (output += chunk))
      child.once("close", (code) => resolve({ code, output }))
    })
  )

const program = `import { FetchHttpClient } from "@effect/platform"
import { makeClient } from "@postline/domain"
import { Effect, Redacted } from "effect"

const program = Effect.gen(function*() {
  const client = yield* makeClient({ baseUrl: process.env.POSTLINE_URL!, token: Redacted.make(process.env.POSTLINE_TOKEN!) })
  const created = yield* client.organizations.createOrganization({ payload: { name: "Packed Co" } })
  const { data } = yield* client.organizations.listOrganizations({ urlParams: {} })
  console.log(JSON.stringify({ created: { id: created.id, name: created.name }, listed: data.map((org) => org.id) }))
})

program.pipe(Effect.provide(FetchHttpClient.layer), Effect.runPromise)
`

const wrongFieldType = `import { makeClient } from "@postline/domain"
import { Effect } from "effect"

export const wrong = Effect.flatMap(makeClient({ token: "plt_x" }), (client) =>
  client.organizations.createOrganization({ payload: { name: 42 } }))
`

// Only the package's files decide this, not the database: one project is enough.
describe.skipIf(testDatabaseKind !== "embedded")("the packed @postline/domain", () => {
  it.scopedLive("installs with npm next to Effect 3, type-checks under NodeNext and talks to a server from plain node", () =>
    Effect.gen(function*() {
      const work = yield* scopedTempDir("postline-client-package-")
      const packed = yield* exec("pnpm", ["pack", "--pack-destination", work], domainDir)
      expect(packed.code, packed.output).toBe(0)
      const tarball = readdirSync(work).find((name) => name.endsWith(".tgz"))!

      const project = Path.join(work, "project")
      mkdirSync(project)
      writeFileSync(Path.join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))
      // skipLibCheck off, so that every shipped .d.ts is checked too.
      const compilerOptions = {
        module: "NodeNext",
        moduleResolution: "NodeNext",
        target: "ES2022",
        strict: true,
        skipLibCheck: false,
        types: ["node"],
        outDir: "out"
      }
      writeFileSync(Path.join(project, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["main.ts"] }))
      // The wrong file is checked with exactOptionalPropertyTypes on, the program with it off: both settings are
      // covered, since an error in a shipped .d.ts would be reported next to the expected one.
      writeFileSync(
        Path.join(project, "tsconfig.wrong.json"),
        JSON.stringify({
          compilerOptions: { ...compilerOptions, exactOptionalPropertyTypes: true, noEmit: true },
          files: ["wrong.ts"]
        })
      )
      writeFileSync(Path.join(project, "main.ts"), program)
      writeFileSync(Path.join(project, "wrong.ts"), wrongFieldType)

      const installed = yield* exec("npm", [
        "install",
        "--no-audit",
        "--no-fund",
        "--prefer-offline",
        Path.join(work, tarball),
        "effect@3.22.4",
        "@effect/platform@0.97.2",
        "typescript@5.9.3",
        "@types/node@24"
      ], project)
      expect(installed.code, installed.output).toBe(0)

      const tsc = Path.join(project, "node_modules/.bin/tsc")
      const [compiled, wrong] = yield* Effect.all([
        exec(tsc, ["-p", "tsconfig.json"], project),
        exec(tsc, ["-p", "tsconfig.wrong.json"], project)
      ], { concurrency: 2 })
      expect(compiled.code, compiled.output).toBe(0)
      expect(wrong.code).not.toBe(0)
      expect(wrong.output.split("\n").filter((line) => line.includes("error TS"))).toEqual([
        expect.stringMatching(/^wrong\.ts\(5,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/)
      ])

      const database = yield* freshDatabaseEnv
      const { token } = yield* createUserWithToken(database)
      const server = yield* startServer(database)
      const ran = yield* exec(process.execPath, ["out/main.js"], project, {
        PATH: process.env.PATH ?? "",
        POSTLINE_URL: server.base,
        POSTLINE_TOKEN: token
      })
      expect(ran.code, ran.output).toBe(0)
      const { created, listed } = JSON.parse(ran.output)
      expect(created).toEqual({ id: expect.any(String), name: "Packed Co" })
      expect(listed).toEqual([created.id])
    }), 240_000)
})
