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
const rawMcp = (server: ServerProcess, init: { method: string; token?: string; body?: string; headers?: Record<string, string> }) =>
  Effect.promise(async () => {
    const response = await fetch(`${server.base}/mcp`, {
      method: init.method,
      headers: {
        ...init.headers,
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

layer(SetupLive, { excludeTestServices: true })("MCP over streamable HTTP at /mcp", (it) => {
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
      expect(garbled.body).toEqual({
        _tag: "BadRequest",
        message: "The request body is not valid JSON",
        jsonrpc: "2.0",
        id: null,
        error: { code: -32700, message: "Parse error: The request body is not valid JSON" }
      })
      const initialized = yield* rawMcp(server, { method: "POST", token, body: initialize })
      expect(initialized.status).toBe(200)
      expect(initialized.body.result.serverInfo).toEqual({ name: "postline", version: "0.1.0" })
    }))

  it.scoped("lists every tool, each with an object input schema, a description and its hints", () =>
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
      expect(byName.get("list_providers")!.description).toContain("Read this before writing a post")
      expect(byName.get("list_providers")!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, openWorldHint: false })
      expect(byName.get("list_providers")!.inputSchema).toMatchObject({ type: "object", properties: {}, additionalProperties: false })
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

  it.scoped("a JSON-RPC batch: 400 BadRequest saying MCP 2025-06-18 has no batches, none of its calls made; served under MCP 2025-03-26", () =>
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
      const batchRefused = "The MCP endpoint takes one JSON-RPC message per request, not a batch (an array): MCP 2025-06-18 has no batching"
      expect(batch.body).toEqual({
        _tag: "BadRequest",
        message: batchRefused,
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: `Invalid Request: ${batchRefused}` }
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

      // A client that negotiated MCP 2025-03-26, which has batches: served, answered in the batch's order.
      const negotiated = { "mcp-protocol-version": "2025-03-26" }
      const asBatch = (messages: ReadonlyArray<unknown>) =>
        rawMcp(server, { method: "POST", token: acme.apiKey, headers: negotiated, body: JSON.stringify(messages) })
      const served = yield* asBatch([
        { ...createPost(5), id: "five" },
        { jsonrpc: "2.0", id: true, method: "ping" },
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { jsonrpc: "2.0", id: 3.5, method: "ping" },
        { jsonrpc: "2.0", id: "x", method: "no/such/method" }
      ])
      expect(served.status).toBe(200)
      expect(served.body).toMatchObject([
        { jsonrpc: "2.0", id: "five", result: { isError: false, structuredContent: { content: "Batched 5" } } },
        { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid Request: an id is a string or a number" } },
        { jsonrpc: "2.0", id: 3.5, result: {} },
        { jsonrpc: "2.0", id: "x", error: { code: -32601, message: "Method not found: no/such/method" } }
      ])
      expect(served.body).toHaveLength(4)
      expect(yield* asBatch([{ jsonrpc: "2.0", method: "notifications/initialized" }])).toMatchObject({ status: 202, text: "" })
      for (const messages of [[], Array.from({ length: 21 }, (_, i) => ({ jsonrpc: "2.0", id: i, method: "ping" }))]) {
        expect(yield* asBatch(messages)).toMatchObject({
          status: 400,
          body: { _tag: "BadRequest", id: null, error: { code: -32600, message: "Invalid Request: a batch holds 1 to 20 messages" } }
        })
      }
      expect((yield* acme.asKey("GET", `/v1/teams/${acme.teamId}/posts`)).body.total).toBe(2)
    }))

  it.scoped("JSON-RPC ids are echoed as sent (strings, any number); malformed messages get the spec's codes, never a 5xx", () =>
    Effect.gen(function*() {
      const { env, server } = yield* Setup
      const { token } = yield* createUserWithToken(env)
      const post = (body: unknown) => rawMcp(server, { method: "POST", token, body: typeof body === "string" ? body : JSON.stringify(body) })
      for (const id of ["abc", "7b0e4f3c-5a3e-4c55-9d7e-0f4f4e1c2b6a", "", 1.5, 7, -3, 0]) {
        expect(yield* post({ jsonrpc: "2.0", id, method: "ping" }), JSON.stringify(id)).toMatchObject({
          status: 200,
          body: { jsonrpc: "2.0", id, result: {} }
        })
      }
      const called = yield* post({ jsonrpc: "2.0", id: "call-1", method: "tools/call", params: { name: "get_agent_context", arguments: {} } })
      expect(called).toMatchObject({ status: 200, body: { jsonrpc: "2.0", id: "call-1", result: { isError: false } } })
      expect(yield* post({ jsonrpc: "2.0", id: "abc", method: "no/such/method" })).toMatchObject({
        status: 200,
        body: { jsonrpc: "2.0", id: "abc", error: { code: -32601, message: "Method not found: no/such/method" } }
      })
      expect(yield* post({ jsonrpc: "2.0", id: 5, method: "tools/list", params: null })).toMatchObject({
        status: 200,
        body: { jsonrpc: "2.0", id: 5, error: { code: -32602, message: "Invalid params: the params of tools/list are an object" } }
      })
      expect(yield* post({ jsonrpc: "2.0", id: "p", method: "tools/call", params: { arguments: {} } })).toMatchObject({
        status: 200,
        body: { jsonrpc: "2.0", id: "p", error: { code: -32602, message: "Invalid params: the params do not match the method's schema" } }
      })
      /** 400, the JSON-RPC error answer and the API's error in one body. */
      const invalidRequest = (id: unknown, why: string) => ({
        status: 400,
        body: {
          _tag: "BadRequest",
          message: `Invalid Request: ${why}`,
          jsonrpc: "2.0",
          id,
          error: { code: -32600, message: `Invalid Request: ${why}` }
        }
      })
      for (const id of [true, {}, null, [1]]) {
        expect(yield* post({ jsonrpc: "2.0", id, method: "ping" }), JSON.stringify(id))
          .toEqual(expect.objectContaining(invalidRequest(null, "an id is a string or a number")))
      }
      for (const body of ['"hello"', "42", "null", "true"]) {
        expect(yield* post(body), body).toEqual(expect.objectContaining(invalidRequest(null, "a message is a JSON object")))
      }
      expect(yield* post({ id: 1, method: "ping" })).toEqual(expect.objectContaining(invalidRequest(1, `"jsonrpc" must be "2.0"`)))
      expect(yield* post({ jsonrpc: "2.0", id: "m", method: 3 })).toEqual(expect.objectContaining(invalidRequest("m", `"method" must be a string`)))
      expect(yield* post({ jsonrpc: "2.0", id: "r" })).toEqual(expect.objectContaining(invalidRequest("r", `a request has a "method"`)))
      // A response from the client, and a notification of a method the server does not know: nothing to answer.
      expect(yield* post({ jsonrpc: "2.0", id: 9, result: {} })).toMatchObject({ status: 202, text: "" })
      expect(yield* post({ jsonrpc: "2.0", method: "notifications/unknown" })).toMatchObject({ status: 202, text: "" })
      // Still served after all that.
      expect(yield* post({ jsonrpc: "2.0", id: "last", method: "ping" })).toMatchObject({ status: 200, body: { id: "last", result: {} } })
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

      // Under MCP 2025-03-26 each message of a batch counts: one more than the limit is refused whole.
      const batching = yield* createUserWithToken(env)
      const pings = (count: number) =>
        rawMcp(server, {
          method: "POST",
          token: batching.token,
          headers: { "mcp-protocol-version": "2025-03-26" },
          body: JSON.stringify(Array.from({ length: count }, (_, id) => ({ jsonrpc: "2.0", id, method: "ping" })))
        })
      expect(yield* pings(requestsPerWindow + 1)).toMatchObject({ status: 429, body: { _tag: "TooManyRequests" } })
    }))
})
