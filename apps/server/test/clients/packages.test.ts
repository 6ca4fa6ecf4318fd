import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { homedir } from "node:os"
import * as Path from "node:path"
import { callsAs, createUserWithToken, serverDir, startServer } from "../support/ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir, testDatabaseKind } from "../support/TestDatabase.js"

const repository = Path.resolve(serverDir, "../..")

/** The fenced block of a Markdown file that holds `marker`, its `$ ` prompts dropped: shell as a reader pastes it. */
const blockWith = (file: string, marker: string) => {
  const blocks = [...readFileSync(Path.join(repository, file), "utf8").matchAll(/^```(?:sh|console)\n([\s\S]*?)^```$/gm)]
  const block = blocks.map(([, text]) => text!).find((text) => text.includes(marker))
  if (block === undefined) throw new Error(`${file} has no shell block with ${marker}`)
  return block.replace(/^\$ /gm, "")
}

/**
 * A reader's machine for the README's install commands: a home of its own (HOME, where `~` goes), a folder
 * holding `postline` (this clone), and npm with its global folder in the home and this machine's cache first
 * (the rest of this process's environment kept: the registry's certificates).
 */
const readersMachine = Effect.gen(function*() {
  const home = yield* scopedTempDir("postline-reader-")
  symlinkSync(repository, Path.join(home, "postline"))
  const env = {
    ...process.env,
    HOME: home,
    npm_config_cache: Path.join(homedir(), ".npm"),
    npm_config_prefer_offline: "true",
    npm_config_prefix: Path.join(home, "global"),
    npm_config_audit: "false",
    npm_config_fund: "false"
  }
  return { home, env }
})

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

// What a user of @postline/domain alone writes: the derived client over a token.
const domainProgram = `import { FetchHttpClient } from "@effect/platform"
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

// What a user of @postline/sdk writes: the service from the environment, the domain's client through it.
const sdkProgram = `import { logout, Postline, PublishInDoubt } from "@postline/sdk"
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

// One mistake each, which the shipped types must catch with exactly its error.
const wrongFieldType = `import { makeClient } from "@postline/domain"
import { Effect } from "effect"

export const wrong = Effect.flatMap(makeClient({ token: "plt_x" }), (client) =>
  client.organizations.createOrganization({ payload: { name: 42 } }))
`

const wrongOption = `import { Postline } from "@postline/sdk"

export const layer = Postline.layerNode({ retry: { maxAttempts: "4" } })
`

// Only the packages' files decide this, not the database: one project is enough. One install serves both
// packages, as a user of the SDK gets the domain with it.
describe.skipIf(testDatabaseKind !== "embedded")("the packed @postline/domain and @postline/sdk", () => {
  it.scopedLive("install with npm next to Effect 3, type-check strictly under NodeNext and run from plain node", () =>
    Effect.gen(function*() {
      // The README's commands, as written: both packages packed in the clone, both tarballs installed in a project.
      const { env, home: work } = yield* readersMachine
      const project = Path.join(work, "my-app")
      mkdirSync(project)
      writeFileSync(Path.join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }))
      const installed = yield* exec("bash", ["-e", "-c", blockWith("README.md", "pnpm --dir packages/sdk pack")], work, env)
      expect(installed.code, installed.output).toBe(0)
      expect(Object.keys(JSON.parse(readFileSync(Path.join(project, "package.json"), "utf8")).dependencies).sort()).toEqual([
        "@effect/platform",
        "@effect/platform-node",
        "@postline/domain",
        "@postline/sdk",
        "effect"
      ])

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
      writeFileSync(Path.join(project, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["domain.ts", "sdk.ts"] }))
      // The wrong files are checked with exactOptionalPropertyTypes on, the programs with it off: both settings are
      // covered, since an error in a shipped .d.ts would be reported next to the expected ones.
      writeFileSync(
        Path.join(project, "tsconfig.wrong.json"),
        JSON.stringify({
          compilerOptions: { ...compilerOptions, exactOptionalPropertyTypes: true, noEmit: true },
          files: ["wrong-domain.ts", "wrong-sdk.ts"]
        })
      )
      writeFileSync(Path.join(project, "domain.ts"), domainProgram)
      writeFileSync(Path.join(project, "sdk.ts"), sdkProgram)
      writeFileSync(Path.join(project, "wrong-domain.ts"), wrongFieldType)
      writeFileSync(Path.join(project, "wrong-sdk.ts"), wrongOption)

      // The test's own tools, beside what the README installed.
      const tools = yield* exec("npm", ["install", "typescript@5.9.3", "@types/node@24"], project, env)
      expect(tools.code, tools.output).toBe(0)
      // The SDK brings @effect/platform-node; the domain alone must not need it, nor anything beyond its peers.
      const domainPackage = Path.join(project, "node_modules/@postline/domain")
      const domainImports = yield* exec("grep", ["-rhoE", "from \"[^\".][^\"]*\"", "dist"], domainPackage)
      const packageOf = (specifier: string) => specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/")
      expect(new Set(domainImports.output.trim().split("\n").map((line) => packageOf(line.slice(6, -1)))))
        .toEqual(new Set(["effect", "@effect/platform"]))

      const tsc = Path.join(project, "node_modules/.bin/tsc")
      const [compiled, wrong] = yield* Effect.all([
        exec(tsc, ["-p", "tsconfig.json"], project),
        exec(tsc, ["-p", "tsconfig.wrong.json"], project)
      ], { concurrency: 2 })
      expect(compiled.code, compiled.output).toBe(0)
      expect(wrong.code).not.toBe(0)
      expect(wrong.output.split("\n").filter((line) => line.includes("error TS")).sort()).toEqual([
        expect.stringMatching(/^wrong-domain\.ts\(5,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/),
        expect.stringMatching(/^wrong-sdk\.ts\(3,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/)
      ])

      const database = yield* freshDatabaseEnv
      const { token } = yield* createUserWithToken(database)
      const server = yield* startServer(database)
      // A home of its own, so that no stored login of this machine is read.
      const home = Path.join(work, "home")
      mkdirSync(home)
      const run = (file: string, env: Record<string, string>) =>
        exec(process.execPath, [file], project, { PATH: process.env.PATH ?? "", HOME: home, POSTLINE_URL: server.base, ...env })

      const ranDomain = yield* run("out/domain.js", { POSTLINE_TOKEN: token })
      expect(ranDomain.code, ranDomain.output).toBe(0)
      const { created, listed } = JSON.parse(ranDomain.output)
      expect(created).toEqual({ id: expect.any(String), name: "Packed Co" })
      expect(listed).toEqual([created.id])

      const apiKey = yield* callsAs(server, token)("POST", `/v1/organizations/${created.id}/api-keys`, { name: "Packed SDK" })
      expect(apiKey.status, apiKey.text).toBe(201)
      const ranSdk = yield* run("out/sdk.js", { POSTLINE_API_KEY: apiKey.body.key })
      expect(ranSdk.code, ranSdk.output).toBe(0)
      expect(JSON.parse(ranSdk.output)).toEqual({
        credentials: "api-key",
        baseUrl: server.base,
        exports: { logout: "function", PublishInDoubt: "PublishInDoubt" },
        organizationId: created.id,
        post: { teamId: expect.any(String), content: "From the packed SDK", status: "draft" }
      })
    }))

  it.scopedLive("the command line installs as its README says: a copy of the bundle, not a link into the clone", () =>
    Effect.gen(function*() {
      const { env, home } = yield* readersMachine
      // The block's `pnpm install` is this clone's, done already: the rest runs as written, from the clone.
      const commands = blockWith("apps/cli/README.md", "npm install -g").split("\n").filter((line) => !/^pnpm install\b/.test(line))
      const installed = yield* exec("bash", ["-e", "-c", commands.join("\n")], Path.join(home, "postline"), env)
      expect(installed.code, installed.output).toBe(0)

      const globalPackage = Path.join(home, "global/lib/node_modules/@postline/cli")
      expect(lstatSync(globalPackage).isSymbolicLink(), "npm linked the clone's folder instead of copying the package").toBe(false)
      expect(realpathSync(Path.join(home, "global/bin/postline")).startsWith(`${globalPackage}/`)).toBe(true)
      // What runs is the installed copy alone: the tarball gone, from a folder outside the clone.
      for (const tarball of ["postline-cli-0.1.0.tgz"]) rmSync(Path.join(home, tarball))
      expect(existsSync(Path.join(globalPackage, "dist/postline-bundle.js"))).toBe(true)
      const { version } = JSON.parse(readFileSync(Path.join(repository, "apps/cli/package.json"), "utf8"))
      const ran = yield* exec(Path.join(home, "global/bin/postline"), ["--version"], home, env)
      expect(ran.code, ran.output).toBe(0)
      expect(ran.output).toContain(version)
    }))
})
