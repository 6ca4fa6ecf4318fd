import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import {
  created,
  crossOrganizationRefused,
  everyToolOnce,
  invalidArgumentsRefused,
  type McpServerSetup,
  mcpServerSetup,
  organizationWithKey,
  success,
  toolNames
} from "./support/McpFlow.js"
import { grantCredits } from "./support/ProcessPublishing.js"
import { callsAs, createUserWithToken, type ServerProcess, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"

/** The official SDK's client on the server's /mcp, with this bearer token (or none); closed with the scope. */
const connect = (server: ServerProcess, token?: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "mcp-http-test", version: "1.0.0" })
      const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` }
      await client.connect(new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), { requestInit: { headers } }))
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

/** A raw request to /mcp: status, headers and body. */
const rawMcp = (server: ServerProcess, init: { method: string; token?: string; body?: string }) =>
  Effect.promise(async () => {
    const response = await fetch(`${server.base}/mcp`, {
      method: init.method,
      headers: {
        accept: "application/json, text/event-stream",
        ...(init.body === undefined ? {} : { "content-type": "application/json" }),
        ...(init.token === undefined ? {} : { authorization: `Bearer ${init.token}` })
      },
      ...(init.body === undefined ? {} : { body: init.body })
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, text, body: text === "" ? null : JSON.parse(text) }
  })

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
})

class Setup extends Context.Tag("Setup")<Setup, McpServerSetup>() {}

const SetupLive = Layer.scoped(Setup, mcpServerSetup)

layer(SetupLive, { excludeTestServices: true, timeout: 120_000 })("MCP over streamable HTTP at /mcp", (it) => {
  it.scoped("no bearer token, or a wrong one: 401 JSON with a Bearer challenge, and the SDK's client cannot connect", () =>
    Effect.gen(function*() {
      const { server } = yield* Setup
      for (const method of ["POST", "GET", "DELETE"]) {
        const anonymous = yield* rawMcp(server, { method, ...(method === "POST" ? { body: initialize } : {}) })
        expect(anonymous.status).toBe(401)
        expect(anonymous.headers.get("www-authenticate")).toMatch(/^Bearer /)
        expect(anonymous.body).toEqual({
          _tag: "Unauthorized",
          message: "Missing Authorization header: send `Authorization: Bearer <token>`"
        })
      }
      const wrong = yield* rawMcp(server, { method: "POST", token: "plk_not-a-key", body: initialize })
      expect(wrong.status).toBe(401)
      expect(wrong.body).toEqual({ _tag: "Unauthorized", message: "Invalid, revoked or expired API key" })

      const refused = yield* Effect.promise(() =>
        new Client({ name: "anonymous", version: "1" })
          .connect(new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`)))
          .then(() => ({ code: 200, message: "connected" }), (error: { code: number; message: string }) => error)
      )
      expect(refused.code).toBe(401)
      expect(refused.message).toContain("Missing Authorization header")
    }))

  it.scoped("with a token: GET and DELETE 405 (no event stream, no sessions), notifications 202, a body not JSON 400", () =>
    Effect.gen(function*() {
      const { env, server } = yield* Setup
      const { token } = yield* createUserWithToken(env)
      for (const method of ["GET", "DELETE"]) {
        const answer = yield* rawMcp(server, { method, token })
        expect(answer.status).toBe(405)
        expect(answer.headers.get("allow")).toBe("POST")
        expect(answer.body).toMatchObject({ _tag: "MethodNotAllowed" })
      }
      const notified = yield* rawMcp(server, {
        method: "POST",
        token,
        body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })
      })
      expect(notified).toMatchObject({ status: 202, text: "" })
      const garbled = yield* rawMcp(server, { method: "POST", token, body: "{ not json" })
      expect(garbled.status).toBe(400)
      expect(garbled.body).toEqual({ _tag: "BadRequest", message: "The request body is not valid JSON" })
      const initialized = yield* rawMcp(server, { method: "POST", token, body: initialize })
      expect(initialized.status).toBe(200)
      expect(initialized.body.result.serverInfo).toEqual({ name: "postline", version: "0.1.0" })
    }))

  it.scoped("lists the 22 tools, each with an object input schema, a description and its hints", () =>
    Effect.gen(function*() {
      const { env, server } = yield* Setup
      const { token } = yield* createUserWithToken(env)
      const client = yield* connect(server, token)
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.map((tool) => tool.name)).toEqual(toolNames)
      for (const tool of tools) {
        expect(tool.inputSchema.type).toBe("object")
        expect(tool.description!.length).toBeGreaterThan(40)
      }
      const byName = new Map(tools.map((tool) => [tool.name, tool]))
      expect(byName.get("create_post")!.inputSchema.required).toEqual(["teamId", "content"])
      expect(byName.get("get_post")!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false })
      expect(byName.get("post_now")!.annotations).toMatchObject({ readOnlyHint: false, openWorldHint: true })
      expect(byName.get("post_now")!.inputSchema.properties).toHaveProperty("idempotencyKey")
      for (const publish of ["post_now", "schedule_post"]) {
        expect(byName.get(publish)!.description).toContain("estimate first with estimate_post")
      }
      for (const refresh of ["refresh_post_analytics", "refresh_account_analytics"]) {
        expect(byName.get(refresh)!.description).toContain("estimate first with estimate_analytics_refresh")
        expect(byName.get(refresh)!.annotations).toMatchObject({ readOnlyHint: false, idempotentHint: false, openWorldHint: true })
        expect(byName.get(refresh)!.inputSchema.properties).toHaveProperty("idempotencyKey")
      }
      expect(byName.get("get_post_analytics")!.inputSchema.properties!.limit).toMatchObject({ type: "integer", minimum: 1, maximum: 1000 })
    }))

  it.scoped("get_billing as a member who is not an admin or owner: the credits, and no account part", () =>
    Effect.gen(function*() {
      const { env, server } = yield* Setup
      const owner = yield* createUserWithToken(env)
      const member = yield* createUserWithToken(env)
      const organization = created(yield* callsAs(server, owner.token)("POST", "/v1/organizations", { name: "Members Co" }))
      const { email } = (yield* callsAs(server, member.token)("GET", "/v1/agent/context")).body.user
      created(yield* callsAs(server, owner.token)("POST", `/v1/organizations/${organization.id}/members`, { email, role: "member" }))
      yield* grantCredits(env, organization.id, 2)
      const client = yield* connect(server, member.token)
      expect(yield* success(client, "get_billing", { organizationId: organization.id })).toEqual({
        enabled: false,
        creditPacks: [],
        plan: null,
        credits: { balance: 2, reserved: 0, available: 2 },
        account: null
      })
      const asOwner = yield* success(yield* connect(server, owner.token), "get_billing", { organizationId: organization.id })
      expect(asOwner.account).toMatchObject({ subscriptionStatus: "inactive", spendCap: { monthlyCredits: null, spentThisMonth: 0 } })
    }))

  it.scoped("a JSON-RPC batch: 400 BadRequest saying MCP has no batches, and none of its calls made", () =>
    Effect.gen(function*() {
      const { env, server } = yield* Setup
      const acme = yield* organizationWithKey(server, env, "Batch Co")
      expect((yield* rawMcp(server, { method: "POST", token: acme.apiKey, body: initialize })).status).toBe(200)
      const createPost = (id: number) => ({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "create_post", arguments: { teamId: acme.teamId, content: `Batched ${id}` } }
      })
      const batch = yield* rawMcp(server, { method: "POST", token: acme.apiKey, body: JSON.stringify([createPost(2), createPost(3)]) })
      expect(batch.status).toBe(400)
      expect(batch.body).toEqual({
        _tag: "BadRequest",
        message: "The MCP endpoint takes one JSON-RPC message per request, not a batch (an array): MCP 2025-06-18 has no batching"
      })
      const notifications = yield* rawMcp(server, {
        method: "POST",
        token: acme.apiKey,
        body: JSON.stringify([{ jsonrpc: "2.0", method: "notifications/initialized" }])
      })
      expect(notifications.status).toBe(400)
      expect(notifications.body._tag).toBe("BadRequest")
      expect((yield* acme.asKey("GET", `/v1/teams/${acme.teamId}/posts`)).body.total).toBe(0)
      // One message alone is still served.
      const single = yield* rawMcp(server, { method: "POST", token: acme.apiKey, body: JSON.stringify(createPost(4)) })
      expect(single.status).toBe(200)
      expect(single.body.result).toMatchObject({ isError: false, structuredContent: { content: "Batched 4" } })
    }))

  it.scoped("every tool once, as an organization's API key: a draft published to a webhook, replayed, scheduled, unscheduled; a Mastodon post's analytics refreshed until 402; billing", () =>
    Effect.flatMap(Setup, (setup) => everyToolOnce(setup, (apiKey) => connect(setup.server, apiKey))))

  it.scoped("another organization's real team: each tool error carries the API's 404 NotFound and its message", () =>
    Effect.flatMap(Setup, (setup) => crossOrganizationRefused(setup, (apiKey) => connect(setup.server, apiKey))))

  it.scoped("arguments the schemas refuse: a tool error naming each field, and nothing sent to the API", () =>
    Effect.flatMap(Setup, (setup) => invalidArgumentsRefused(setup, (apiKey) => connect(setup.server, apiKey))))

  it.scoped("two callers at once: each call acts as its own caller, never as the other", () =>
    Effect.gen(function*() {
      const { env, server } = yield* Setup
      const first = yield* organizationWithKey(server, env, "First Co")
      const second = yield* organizationWithKey(server, env, "Second Co")
      const firstClient = yield* connect(server, first.apiKey)
      const secondClient = yield* connect(server, second.apiKey)
      const organizationsSeen = (client: Client) =>
        Effect.map(success(client, "list_organizations", {}), (list) => list.data.map((org: { id: string }) => org.id))
      const rounds = 15
      const seen = yield* Effect.all(
        Array.from({ length: rounds }, () => Effect.all([organizationsSeen(firstClient), organizationsSeen(secondClient)], { concurrency: 2 })),
        { concurrency: rounds }
      )
      for (const [byFirst, bySecond] of seen) {
        expect(byFirst).toEqual([first.organizationId])
        expect(bySecond).toEqual([second.organizationId])
      }
    }))
})

class LimitedServer extends Context.Tag("LimitedServer")<LimitedServer, {
  readonly env: Record<string, string>
  readonly server: ServerProcess
}>() {}

const requestsPerWindow = 4

layer(
  Layer.scoped(
    LimitedServer,
    Effect.gen(function*() {
      const env = { ...(yield* freshDatabaseEnv), RATE_LIMIT_REQUESTS: String(requestsPerWindow), RATE_LIMIT_WINDOW_SECONDS: "600" }
      return { env, server: yield* startServer(env) }
    })
  ),
  { excludeTestServices: true, timeout: 120_000 }
)("MCP at /mcp under the caller's rate limit", (it) => {
  it.scoped("each /mcp request counts, as do the API calls of its tools: past the limit, 429 with Retry-After", () =>
    Effect.gen(function*() {
      const { env, server } = yield* LimitedServer
      const { token } = yield* createUserWithToken(env)
      const listTools = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} })
      const context = JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "get_agent_context", arguments: {} } })
      expect((yield* rawMcp(server, { method: "POST", token, body: initialize })).status).toBe(200)
      expect((yield* rawMcp(server, { method: "POST", token, body: listTools })).status).toBe(200)
      // The third request, and its tool's call of the API, the fourth.
      const called = yield* rawMcp(server, { method: "POST", token, body: context })
      expect(called.status).toBe(200)
      expect(called.body.result.isError).toBe(false)
      const limited = yield* rawMcp(server, { method: "POST", token, body: listTools })
      expect(limited.status).toBe(429)
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0)
      expect(limited.body).toMatchObject({ _tag: "TooManyRequests", message: expect.stringContaining(`at most ${requestsPerWindow} every 600 seconds`) })
      // A tool whose API call is over the limit says so as a tool error.
      const other = yield* createUserWithToken(env)
      for (let i = 0; i < requestsPerWindow - 1; i++) {
        expect((yield* rawMcp(server, { method: "POST", token: other.token, body: listTools })).status).toBe(200)
      }
      const overByItsCall = yield* rawMcp(server, { method: "POST", token: other.token, body: context })
      expect(overByItsCall.status).toBe(200)
      expect(overByItsCall.body.result).toMatchObject({ isError: true, structuredContent: { _tag: "TooManyRequests" } })
    }))
})
