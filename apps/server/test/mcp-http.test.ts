import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { makeLocalServer } from "./support/LocalServer.js"
import { noisyPng } from "./support/Media.js"
import { accountOf, grantCredits, readUntil } from "./support/ProcessPublishing.js"
import { makeWebhookReceiver } from "./support/Publishing.js"
import { callsAs, createUserWithToken, type ProcessResponse, type ServerProcess, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir } from "./support/TestDatabase.js"
import { inSeconds } from "./support/Waiting.js"

const toolNames = [
  "get_agent_context",
  "list_organizations",
  "list_teams",
  "list_social_accounts",
  "create_post",
  "update_post",
  "get_post",
  "list_posts",
  "estimate_post",
  "post_now",
  "schedule_post",
  "unschedule_post",
  "get_credits",
  "list_posting_slots",
  "import_asset_from_url",
  "list_assets"
]

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

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

/** A tool's result: whether it is an error, and its structured content, which its text says in JSON too. */
const call = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.promise(async () => {
    const result = await client.callTool({ name, arguments: args })
    const content = result.content as Array<{ type: string; text: string }>
    expect(content).toHaveLength(1)
    expect(JSON.parse(content[0]!.text)).toEqual(result.structuredContent)
    return { isError: result.isError === true, value: result.structuredContent as any }
  })

/** A tool's successful result. */
const success = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.map(call(client, name, args), (result) => {
    expect(result.isError, JSON.stringify(result.value)).toBe(false)
    return result.value
  })

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

const created = (answer: ProcessResponse) => {
  if (answer.status !== 201) throw new Error(`setup failed: ${answer.status} ${answer.text}`)
  return answer.body
}

/** A user's organization with a team and an API key of the organization. */
const organizationWithKey = (server: ServerProcess, env: Record<string, string>, name: string) =>
  Effect.gen(function*() {
    const { token } = yield* createUserWithToken(env)
    const asUser = callsAs(server, token)
    const organization = created(yield* asUser("POST", "/v1/organizations", { name }))
    const team = created(yield* asUser("POST", "/v1/teams", { organizationId: organization.id, name: `${name} Social` }))
    const apiKey = created(yield* asUser("POST", `/v1/organizations/${organization.id}/api-keys`, { name: "Agent" }))
    return {
      organizationId: organization.id as string,
      teamId: team.id as string,
      apiKey: apiKey.key as string,
      asKey: callsAs(server, apiKey.key)
    }
  })

class Setup extends Context.Tag("Setup")<Setup, {
  readonly env: Record<string, string>
  readonly server: ServerProcess
  readonly receiver: Effect.Effect.Success<typeof makeWebhookReceiver>
  readonly mediaBase: string
}>() {}

/** One server process for the file: webhooks cost a credit and may reach this machine, as may media imports. */
const SetupLive = Layer.scoped(
  Setup,
  Effect.gen(function*() {
    const database = yield* freshDatabaseEnv
    const env = {
      ...database,
      MEDIA_DIR: yield* scopedTempDir("postline-mcp-media-"),
      OUTBOUND_ALLOW_PRIVATE: "true",
      CREDIT_COSTS: JSON.stringify({ webhook: 1 })
    }
    const receiver = yield* makeWebhookReceiver
    const png = yield* noisyPng(64, 48)
    const mediaBase = yield* makeLocalServer((request, response) =>
      request.url === "/photos/harbour.png"
        ? void response.writeHead(200, { "content-type": "image/png" }).end(png)
        : void response.writeHead(404).end()
    )
    const server = yield* startServer(env)
    return { env, server, receiver, mediaBase }
  })
)

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

  it.scoped("lists the 16 tools, each with an object input schema, a description and its hints", () =>
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
    }))

  it.scoped("every tool once, as an organization's API key: a draft published to a webhook, replayed, scheduled, unscheduled", () =>
    Effect.gen(function*() {
      const { env, mediaBase, receiver, server } = yield* Setup
      const acme = yield* organizationWithKey(server, env, "Acme")
      const account = created(yield* acme.asKey("POST", `/v1/teams/${acme.teamId}/social-accounts`, {
        provider: "webhook",
        url: `${receiver.url}/acme`
      }))
      expect((yield* acme.asKey("PUT", `/v1/teams/${acme.teamId}/posting-slots`, { slots: [{ weekday: 3, time: "09:30" }] })).status)
        .toBe(200)
      yield* grantCredits(env, acme.organizationId, 5)
      const client = yield* connect(server, acme.apiKey)
      const teamId = acme.teamId

      const context = yield* success(client, "get_agent_context", {})
      expect(context.user).toBeNull()
      expect(context.organizations.data.map((org: { id: string }) => org.id)).toEqual([acme.organizationId])
      expect(context.teams.data.map((team: { id: string }) => team.id)).toEqual([teamId])
      expect(context.defaults).toEqual({ organizationId: acme.organizationId, teamId })

      const organizations = yield* success(client, "list_organizations", { limit: 10 })
      expect(organizations).toMatchObject({ total: 1, data: [{ id: acme.organizationId, name: "Acme" }] })
      const teams = yield* success(client, "list_teams", { organizationId: acme.organizationId })
      expect(teams).toMatchObject({ total: 1, data: [{ id: teamId, name: "Acme Social" }] })
      const accounts = yield* success(client, "list_social_accounts", { teamId })
      expect(accounts).toMatchObject({ total: 1, data: [{ id: account.id, provider: "webhook", status: "connected" }] })
      expect(yield* success(client, "list_posting_slots", { teamId })).toEqual({ slots: [{ weekday: 3, time: "09:30" }] })
      expect(yield* success(client, "get_credits", { organizationId: acme.organizationId }))
        .toEqual({ balance: 5, reserved: 0, available: 5 })

      const asset = yield* success(client, "import_asset_from_url", {
        teamId,
        url: `${mediaBase}/photos/harbour.png`,
        altText: "The harbour at dawn"
      })
      expect(asset).toMatchObject({ teamId, name: "harbour.png", kind: "image", width: 64, height: 48, altText: "The harbour at dawn" })
      const assets = yield* success(client, "list_assets", { teamId, kind: "image" })
      expect(assets).toMatchObject({ total: 1, data: [{ id: asset.id }] })

      const draft = yield* success(client, "create_post", { teamId, content: "Low tide at the harbour", socialAccountIds: [account.id] })
      expect(draft).toMatchObject({ teamId, content: "Low tide at the harbour", status: "draft", socialAccountIds: [account.id] })
      const updated = yield* success(client, "update_post", { teamId, postId: draft.id, content: "High tide at the harbour" })
      expect(updated).toMatchObject({ id: draft.id, content: "High tide at the harbour", status: "draft" })
      expect(yield* success(client, "get_post", { teamId, postId: draft.id })).toMatchObject({ content: "High tide at the harbour" })
      const posts = yield* success(client, "list_posts", { teamId, status: "draft" })
      expect(posts).toMatchObject({ total: 1, data: [{ id: draft.id }] })

      const estimate = yield* success(client, "estimate_post", { teamId, postId: draft.id, socialAccountIds: [account.id] })
      expect(estimate).toEqual({ total: 1, perAccount: [{ socialAccountId: account.id, credits: 1 }], available: 5, sufficient: true })

      const published = yield* success(client, "post_now", { teamId, postId: draft.id, socialAccountIds: [account.id] })
      expect(published).toMatchObject({
        postId: draft.id,
        outcome: "none_failed",
        results: [{ socialAccountId: account.id, status: "published", creditsSpent: 1 }],
        replayed: false
      })
      expect(published.idempotencyKey).toMatch(uuidShape)
      const delivered = yield* readUntil(
        Effect.sync(() => receiver.received.filter((event) => accountOf(event) === account.id).length),
        (count) => count >= 1,
        20
      )
      expect(delivered).toBe(1)
      expect(JSON.parse(receiver.received.find((event) => accountOf(event) === account.id)!.body).data)
        .toMatchObject({ postId: draft.id, text: "High tide at the harbour" })

      const replay = yield* success(client, "post_now", {
        teamId,
        postId: draft.id,
        socialAccountIds: [account.id],
        idempotencyKey: published.idempotencyKey
      })
      expect(replay).toEqual({ ...published, replayed: true })
      expect(receiver.received.filter((event) => accountOf(event) === account.id)).toHaveLength(1)

      const later = yield* success(client, "create_post", { teamId, content: "Tomorrow's tide table" })
      const scheduledAt = inSeconds(3600)
      const scheduled = yield* success(client, "schedule_post", {
        teamId,
        postId: later.id,
        socialAccountIds: [account.id],
        scheduledAt,
        idempotencyKey: "tide-table-schedule"
      })
      expect(scheduled).toMatchObject({
        postId: later.id,
        outcome: "none_failed",
        results: [{ socialAccountId: account.id, status: "scheduled" }],
        idempotencyKey: "tide-table-schedule",
        replayed: false
      })
      expect(Date.parse(scheduled.scheduledAt)).toBe(Date.parse(scheduledAt))
      expect(yield* success(client, "get_credits", { organizationId: acme.organizationId }))
        .toEqual({ balance: 4, reserved: 1, available: 3 })
      const unscheduled = yield* success(client, "unschedule_post", { teamId, postId: later.id })
      expect(unscheduled).toMatchObject({ id: later.id, status: "draft", scheduledAt: null })
      expect(yield* success(client, "get_credits", { organizationId: acme.organizationId }))
        .toEqual({ balance: 4, reserved: 0, available: 4 })
      expect(receiver.received.filter((event) => accountOf(event) === account.id)).toHaveLength(1)
    }))

  it.scoped("another organization's team: the tool error carries the API's 404 NotFound and its message", () =>
    Effect.gen(function*() {
      const { env, server } = yield* Setup
      const owner = yield* organizationWithKey(server, env, "Owner Co")
      const draft = created(yield* owner.asKey("POST", `/v1/teams/${owner.teamId}/posts`, { content: "Not yours" }))
      const other = yield* organizationWithKey(server, env, "Other Co")
      const client = yield* connect(server, other.apiKey)

      const read = yield* call(client, "get_post", { teamId: owner.teamId, postId: draft.id })
      expect(read).toEqual({ isError: true, value: { _tag: "NotFound", message: `Team ${owner.teamId} not found` } })
      const written = yield* call(client, "create_post", { teamId: owner.teamId, content: "Sneaky" })
      expect(written).toEqual({ isError: true, value: { _tag: "NotFound", message: `Team ${owner.teamId} not found` } })
      const credits = yield* call(client, "get_credits", { organizationId: owner.organizationId })
      expect(credits.isError).toBe(true)
      expect(credits.value._tag).toBe("NotFound")
      // Nothing was made in the owner's team.
      expect((yield* owner.asKey("GET", `/v1/teams/${owner.teamId}/posts`)).body.total).toBe(1)
    }))

  it.scoped("arguments the schemas refuse: a tool error naming each field, and nothing sent to the API", () =>
    Effect.gen(function*() {
      const { env, server } = yield* Setup
      const acme = yield* organizationWithKey(server, env, "Strict Co")
      const client = yield* connect(server, acme.apiKey)

      const refused = yield* call(client, "create_post", { teamId: "nope", text: "Hello" })
      expect(refused.isError).toBe(true)
      expect(refused.value._tag).toBe("InvalidArguments")
      expect(refused.value.issues).toEqual([
        { path: ["text"], message: expect.stringContaining("is unexpected") },
        { path: ["teamId"], message: "must be a UUID (8-4-4-4-12 hexadecimal digits)" },
        { path: ["content"], message: "is missing" }
      ])
      expect(refused.value.message).toMatch(/^Invalid arguments: text: is unexpected.*; teamId: must be a UUID.*; content: is missing$/)

      const blank = yield* call(client, "create_post", { teamId: acme.teamId, content: "   " })
      expect(blank.value).toMatchObject({ _tag: "InvalidArguments", issues: [{ path: ["content"], message: "must be 1 to 10000 characters, not blank" }] })
      const both = yield* call(client, "schedule_post", {
        teamId: acme.teamId,
        postId: crypto.randomUUID(),
        socialAccountIds: [crypto.randomUUID()],
        scheduledAt: inSeconds(3600),
        slot: "next"
      })
      expect(both).toEqual({ isError: true, value: { _tag: "InvalidArguments", message: "Give exactly one of scheduledAt or slot" } })
      expect((yield* acme.asKey("GET", `/v1/teams/${acme.teamId}/posts`)).body.total).toBe(0)
    }))

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
