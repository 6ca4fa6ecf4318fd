import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { mkdirSync, readdirSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { callsAs, createUserWithToken, serverDir, startServer } from "../support/ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir, testDatabaseKind } from "../support/TestDatabase.js"

const packagesDir = Path.resolve(serverDir, "../../packages")

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

// What a user of the package writes: the service from the environment, the domain's client through it.
const program = `import { logout, Postline, PublishInDoubt } from "@postline/sdk"
import { Effect } from "effect"

const program = Effect.gen(function*() {
  const postline = yield* Postline
  const context = yield* postline.client.agent.getContext()
  const organizationId = context.organizations.data[0]!.id
  const team = yield* postline.client.teams.createTeam({ payload: { organizationId, name: "Packed team" } })
  const post = yield* postline.client.posts.createPost({ path: { teamId: team.id }, payload: { content: "From the packed SDK" } })
  console.log(JSON.stringify({
    credentials: postline.credentials,
    baseUrl: postline.baseUrl,
    exports: { logout: typeof logout, PublishInDoubt: new PublishInDoubt({ idempotencyKey: "k", message: "m" })._tag },
    organizationId,
    post: { teamId: post.teamId, content: post.content, status: post.status }
  }))
})

program.pipe(Effect.provide(Postline.layerNode()), Effect.runPromise)
`

const wrongOption = `import { Postline } from "@postline/sdk"

export const layer = Postline.layerNode({ retry: { maxAttempts: "4" } })
`

// Only the packages' files decide this, not the database: one project is enough.
describe.skipIf(testDatabaseKind !== "embedded")("the packed @postline/sdk", () => {
  it.scopedLive("installs with npm next to the packed domain and Effect 3, type-checks strictly under NodeNext and runs from plain node", () =>
    Effect.gen(function*() {
      const work = yield* scopedTempDir("postline-sdk-package-")
      for (const name of ["domain", "sdk"]) {
        const packed = yield* exec("pnpm", ["pack", "--pack-destination", work], Path.join(packagesDir, name))
        expect(packed.code, packed.output).toBe(0)
      }
      const tarballs = readdirSync(work).filter((name) => name.endsWith(".tgz")).sort()
      expect(tarballs).toEqual([expect.stringMatching(/^postline-domain-.*\.tgz$/), expect.stringMatching(/^postline-sdk-.*\.tgz$/)])

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
      writeFileSync(
        Path.join(project, "tsconfig.wrong.json"),
        JSON.stringify({
          compilerOptions: { ...compilerOptions, exactOptionalPropertyTypes: true, noEmit: true },
          files: ["wrong.ts"]
        })
      )
      writeFileSync(Path.join(project, "main.ts"), program)
      writeFileSync(Path.join(project, "wrong.ts"), wrongOption)

      const installed = yield* exec("npm", [
        "install",
        "--no-audit",
        "--no-fund",
        "--prefer-offline",
        ...tarballs.map((name) => Path.join(work, name)),
        "effect@3.22.4",
        "@effect/platform@0.97.2",
        "@effect/platform-node@0.108.2",
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
        expect.stringMatching(/^wrong\.ts\(3,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/)
      ])

      const database = yield* freshDatabaseEnv
      const { token } = yield* createUserWithToken(database)
      const server = yield* startServer(database)
      const call = callsAs(server, token)
      const organization = (yield* call("POST", "/v1/organizations", { name: "Packed SDK" })).body
      const apiKey = yield* call("POST", `/v1/organizations/${organization.id}/api-keys`, { name: "Packed SDK" })
      expect(apiKey.status, apiKey.text).toBe(201)
      // A home of its own, so that no stored login of this machine is read.
      const home = Path.join(work, "home")
      mkdirSync(home)
      const ran = yield* exec(process.execPath, ["out/main.js"], project, {
        PATH: process.env.PATH ?? "",
        HOME: home,
        POSTLINE_URL: server.base,
        POSTLINE_API_KEY: apiKey.body.key
      })
      expect(ran.code, ran.output).toBe(0)
      expect(JSON.parse(ran.output)).toEqual({
        credentials: "api-key",
        baseUrl: server.base,
        exports: { logout: "function", PublishInDoubt: "PublishInDoubt" },
        organizationId: organization.id,
        post: { teamId: expect.any(String), content: "From the packed SDK", status: "draft" }
      })
    }), 300_000)
})
