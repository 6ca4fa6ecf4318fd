import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import { cliPath } from "../support/CliProcess.js"
import { makeLocalServer } from "../support/LocalServer.js"
import {
  call,
  type ConnectAs,
  created,
  crossOrganizationRefused,
  everyToolOnce,
  invalidArgumentsRefused,
  type McpServerSetup,
  mcpServerSetup,
  organizationWithKey,
  success,
  toolNames
} from "../support/McpFlow.js"
import { grantCredits, readUntil } from "../support/ProcessPublishing.js"
import { scopedTempDir } from "../support/TestDatabase.js"

class Setup extends Context.Tag("Setup")<Setup, McpServerSetup & {
  /** The environment of `postline mcp` with this API key: a home of its own (no stored login) and the server. */
  readonly mcpEnv: (apiKey: string) => Record<string, string>
}>() {}

const SetupLive = Layer.scoped(
  Setup,
  Effect.gen(function*() {
    const setup = yield* mcpServerSetup
    const home = yield* scopedTempDir("postline-mcp-home-")
    const mcpEnv = (apiKey: string) => ({
      PATH: process.env.PATH ?? "",
      HOME: home,
      POSTLINE_URL: setup.server.base,
      POSTLINE_API_KEY: apiKey
    })
    return { ...setup, mcpEnv }
  })
)

/**
 * `postline mcp` from this run's CLI bundle, as an agent starts it, with the official SDK's client on its stdio.
 * A line on standard output that is not JSON-RPC (a log, a banner) is a transport error, kept in `outputErrors`.
 */
const startMcp = (env: Record<string, string>, outputErrors: Array<Error>) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const transport = new StdioClientTransport({ command: process.execPath, args: [cliPath(), "mcp"], env, stderr: "pipe" })
      transport.onerror = (error) => void outputErrors.push(error)
      const client = new Client({ name: "mcp-stdio-test", version: "1.0.0" })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

/** Connects `postline mcp` as the holder of an API key, and checks that its standard output carried the protocol alone. */
const overStdio = <A, E, R>(flow: (setup: McpServerSetup, connectAs: ConnectAs) => Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const setup = yield* Setup
    const outputErrors: Array<Error> = []
    yield* flow(setup, (apiKey) => startMcp(setup.mcpEnv(apiKey), outputErrors))
    expect(outputErrors).toEqual([])
  })

interface Exited {
  readonly code: number | null
  /** Each line of standard output, parsed. */
  readonly messages: ReadonlyArray<any>
  readonly stderr: string
}

/** `postline mcp` on pipes written to directly, killed with the scope if it is still running. */
const spawnMcp = (env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(process.execPath, [cliPath(), "mcp"], { env })
      let stdout = ""
      let stderr = ""
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk))
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk))
      const exited = new Promise<Exited>((resolve) =>
        child.once("close", (code) =>
          resolve({ code, messages: stdout.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line)), stderr })
        )
      )
      const send = (messages: ReadonlyArray<unknown>) => child.stdin.write(messages.map((m) => `${JSON.stringify(m)}\n`).join(""))
      return { child, send, exited }
    }),
    ({ child }) => Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"))
  )

/** What `postline mcp` wrote until it exited, which it must within 60 seconds. */
const untilExit = (exited: Promise<Exited>) =>
  Effect.promise(() => exited).pipe(
    Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => new Error("postline mcp did not exit within 60 s") }),
    Effect.orDie
  )

const initialize = [
  {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
  },
  { jsonrpc: "2.0", method: "notifications/initialized" }
]

const toolCall = (id: number, name: string, args: Record<string, unknown>) =>
  ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } })

layer(SetupLive, { excludeTestServices: true })("postline mcp over stdio", (it) => {
  it.scoped("lists every tool and introduces itself as postline", () =>
    Effect.gen(function*() {
      const { env, mcpEnv, server } = yield* Setup
      const outputErrors: Array<Error> = []
      const client = yield* startMcp(mcpEnv((yield* organizationWithKey(server, env, "Listing Co")).apiKey), outputErrors)
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((tool) => tool.name)).toEqual(toolNames)
      expect(client.getServerVersion()).toEqual({ name: "postline", version: "0.1.0" })
      expect(outputErrors).toEqual([])
    }))

  it.scoped("every tool once, as an organization's API key: a draft published to a webhook, replayed, unpublished; another scheduled, unscheduled; a Mastodon post's analytics refreshed until 402; billing", () =>
    overStdio(everyToolOnce))

  it.scoped("a thread with a first comment and a version: created and changed through the tools, published to two webhooks, unpublish_post from one and then the rest (replayed with its key), credits kept", () =>
    Effect.gen(function*() {
      const { env, mcpEnv, receiver, server } = yield* Setup
      const tides = yield* organizationWithKey(server, env, "Tides Co")
      const teamId = tides.teamId
      const webhook = (path: string) =>
        Effect.map(tides.asKey("POST", `/v1/teams/${teamId}/social-accounts`, { provider: "webhook", url: `${receiver.url}/${path}` }), created)
      const harbour = yield* webhook("harbour")
      const pier = yield* webhook("pier")
      yield* grantCredits(env, tides.organizationId, 10)
      const outputErrors: Array<Error> = []
      const client = yield* startMcp(mcpEnv(tides.apiKey), outputErrors)
      const eventsOf = (accountId: string) =>
        receiver.received.map((event) => JSON.parse(event.body)).filter((event) => event.data.socialAccountId === accountId)

      const draft = yield* success(client, "create_post", {
        teamId,
        content: "1/ Why the tide turns",
        socialAccountIds: [harbour.id, pier.id],
        thread: [{ content: "2/ The moon pulls the sea" }, { content: "3/ The sun helps, less" }],
        firstComment: { content: "Tables: https://tides.example" },
        versions: [{ socialAccountId: pier.id, content: "Tides, in one line" }]
      })
      expect(draft).toMatchObject({
        status: "draft",
        thread: [{ content: "2/ The moon pulls the sea", media: [] }, { content: "3/ The sun helps, less", media: [] }],
        firstComment: { content: "Tables: https://tides.example", media: [] },
        versions: [{ socialAccountId: pier.id, content: "Tides, in one line", media: null, thread: null }]
      })
      const tooLong = yield* call(client, "update_post", {
        teamId,
        postId: draft.id,
        thread: Array.from({ length: 25 }, (_, i) => ({ content: `Part ${i + 2}` }))
      })
      expect(tooLong).toEqual({
        isError: true,
        value: {
          _tag: "InvalidArguments",
          message: "Invalid arguments: thread: must be at most 24 parts, each { content, media? }",
          issues: [{ path: ["thread"], message: "must be at most 24 parts, each { content, media? }" }]
        }
      })
      const post = yield* success(client, "update_post", {
        teamId,
        postId: draft.id,
        thread: [{ content: "2/ The moon pulls, the sea follows" }],
        versions: [{ socialAccountId: pier.id, thread: [] }]
      })
      expect(post).toMatchObject({
        thread: [{ content: "2/ The moon pulls, the sea follows" }],
        firstComment: { content: "Tables: https://tides.example" },
        versions: [{ socialAccountId: pier.id, content: null, media: null, thread: [] }]
      })

      const estimate = yield* success(client, "estimate_post", { teamId, postId: post.id, socialAccountIds: [harbour.id, pier.id] })
      expect(estimate.perAccount).toEqual([
        { socialAccountId: harbour.id, credits: expect.any(Number), publishes: 3, problems: [] },
        { socialAccountId: pier.id, credits: expect.any(Number), publishes: 2, problems: [] }
      ])
      const published = yield* success(client, "post_now", { teamId, postId: post.id, socialAccountIds: [harbour.id, pier.id] })
      expect(published).toMatchObject({
        outcome: "none_failed",
        results: [
          { socialAccountId: harbour.id, status: "published", parts: [{ position: 1 }, { position: 2 }], firstComment: { status: "published" } },
          { socialAccountId: pier.id, status: "published", parts: [{ position: 1 }], firstComment: { status: "published" } }
        ]
      })
      expect(eventsOf(harbour.id)).toMatchObject([{
        type: "post.published",
        data: { text: "1/ Why the tide turns", thread: [{ text: "2/ The moon pulls, the sea follows" }], firstComment: { text: "Tables: https://tides.example" } }
      }])
      const { balance } = yield* success(client, "get_credits", { organizationId: tides.organizationId })
      expect(balance).toBe(10 - estimate.total)

      const fromHarbour = yield* success(client, "unpublish_post", { teamId, postId: post.id, socialAccountIds: [harbour.id] })
      expect(fromHarbour).toEqual({
        postId: post.id,
        results: [{ socialAccountId: harbour.id, status: "deleted", error: null }],
        outcome: "none_failed",
        idempotencyKey: expect.stringMatching(/^[0-9a-f-]{36}$/),
        replayed: false
      })
      expect(yield* call(client, "unpublish_post", { teamId, postId: post.id, socialAccountIds: [harbour.id] }))
        .toMatchObject({ isError: true, value: { _tag: "Conflict" } })
      const rest = yield* success(client, "unpublish_post", { teamId, postId: post.id, idempotencyKey: "tides-down" })
      expect(rest).toEqual({
        postId: post.id,
        results: [{ socialAccountId: pier.id, status: "deleted", error: null }],
        outcome: "none_failed",
        idempotencyKey: "tides-down",
        replayed: false
      })
      expect(yield* success(client, "unpublish_post", { teamId, postId: post.id, idempotencyKey: "tides-down" }))
        .toEqual({ ...rest, replayed: true })
      for (const account of [harbour, pier]) {
        expect(eventsOf(account.id).map((event) => event.type)).toEqual(["post.published", "post.deleted"])
      }
      const gone = yield* success(client, "get_post", { teamId, postId: post.id })
      expect(gone.status).toBe("deleted")
      // Targets come oldest first: the two published at once may come in either order.
      expect(Object.fromEntries(gone.targets.map((target: { socialAccountId: string }) => [target.socialAccountId, target]))).toMatchObject({
        [harbour.id]: { status: "deleted", deletedAt: expect.any(String), parts: [{ position: 1 }, { position: 2 }] },
        [pier.id]: { status: "deleted", deletedAt: expect.any(String), parts: [{ position: 1 }] }
      })
      // Nothing given back.
      expect(yield* success(client, "get_credits", { organizationId: tides.organizationId })).toMatchObject({ balance })
      expect(outputErrors).toEqual([])
    }))

  it.scoped("another organization's real team: each tool error carries the API's 404 NotFound and its message", () =>
    overStdio(crossOrganizationRefused))

  it.scoped("arguments the schemas refuse: a tool error naming each field, and nothing sent to the API", () =>
    overStdio(invalidArgumentsRefused))

  it.scoped("an API key the server refuses: the tools answer its 401 as a tool error", () =>
    Effect.gen(function*() {
      const { env, mcpEnv, server } = yield* Setup
      const { teamId } = yield* organizationWithKey(server, env, "Refused Co")
      const outputErrors: Array<Error> = []
      const client = yield* startMcp(mcpEnv("plk_revoked-or-never-made"), outputErrors)
      const refused = yield* call(client, "list_posts", { teamId })
      expect(refused).toEqual({ isError: true, value: { _tag: "Unauthorized", message: "Invalid, revoked or expired API key" } })
      expect(outputErrors).toEqual([])
    }))

  it.scoped("standard input closed while a call runs: the call finishes and is answered before the server exits", () =>
    Effect.gen(function*() {
      const { env, mcpEnv, server } = yield* Setup
      const closing = yield* organizationWithKey(server, env, "Closing Co")
      const mcp = yield* spawnMcp(mcpEnv(closing.apiKey))
      mcp.send([...initialize, toolCall(2, "create_post", { teamId: closing.teamId, content: "The last word" })])
      mcp.child.stdin.end()
      const exited = yield* untilExit(mcp.exited)
      expect(exited.code, exited.stderr).toBe(0)
      expect(exited.messages.map((message) => message.id)).toEqual([1, 2])
      const answer = exited.messages[1]
      expect(answer.error).toBeUndefined()
      expect(answer.result).toMatchObject({ isError: false, structuredContent: { teamId: closing.teamId, content: "The last word" } })
      const posts = (yield* closing.asKey("GET", `/v1/teams/${closing.teamId}/posts`)).body
      expect(posts.data.map((post: { id: string }) => post.id)).toEqual([answer.result.structuredContent.id])
    }))

  it.scoped("stopped while a call runs: the call is answered with a JSON-RPC error in a sentence", () =>
    Effect.gen(function*() {
      const { env, mcpEnv, server } = yield* Setup
      const stopping = yield* organizationWithKey(server, env, "Stopping Co")
      // A media host that never answers: the import's call of the API runs until the server stops.
      let asked = false
      const silentHost = yield* makeLocalServer(() => void (asked = true))
      const mcp = yield* spawnMcp(mcpEnv(stopping.apiKey))
      mcp.send([...initialize, toolCall(2, "import_asset_from_url", { teamId: stopping.teamId, url: `${silentHost}/slow.png` })])
      expect(yield* readUntil(Effect.sync(() => asked), (seen) => seen)).toBe(true)
      mcp.child.kill("SIGTERM")
      const exited = yield* untilExit(mcp.exited)
      expect(exited.messages.map((message) => message.id)).toEqual([1, 2])
      expect(exited.messages[1].error).toMatchObject({
        code: -32603,
        message: "The call was stopped before it finished: the MCP server is stopping, or the call was cancelled"
      })
    }))
})
