import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as Path from "node:path"
import { inject } from "vitest"
import { accountOf, grantCredits, readUntil } from "../support/ProcessPublishing.js"
import { makeWebhookReceiver } from "../support/Publishing.js"
import { callsAs, createUserWithToken, type ProcessResponse, type ServerProcess, startServer } from "../support/ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir } from "../support/TestDatabase.js"

/** `postline mcp` from this run's CLI bundle, as an agent starts it, with the official SDK's client on its stdio. */
const startMcp = (env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [Path.join(inject("cliBundle"), "postline.js"), "mcp"],
        env,
        stderr: "pipe"
      })
      // A line on standard output that is not JSON-RPC (a log, a banner) is reported here.
      const transportErrors: Array<Error> = []
      transport.onerror = (error) => void transportErrors.push(error)
      let stderr = ""
      transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk))
      const client = new Client({ name: "mcp-stdio-test", version: "1.0.0" })
      await client.connect(transport)
      return { client, transportErrors, stderr: () => stderr }
    }),
    ({ client }) => Effect.promise(() => client.close())
  )

/** A tool's result: whether it is an error, and its structured content, which its text says in JSON too. */
const call = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.promise(async () => {
    const result = await client.callTool({ name, arguments: args })
    const content = result.content as Array<{ type: string; text: string }>
    expect(JSON.parse(content[0]!.text)).toEqual(result.structuredContent)
    return { isError: result.isError === true, value: result.structuredContent as any }
  })

const success = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.map(call(client, name, args), (result) => {
    expect(result.isError, JSON.stringify(result.value)).toBe(false)
    return result.value
  })

const created = (answer: ProcessResponse) => {
  if (answer.status !== 201) throw new Error(`setup failed: ${answer.status} ${answer.text}`)
  return answer.body
}

class Setup extends Context.Tag("Setup")<Setup, {
  readonly server: ServerProcess
  readonly receiver: Effect.Effect.Success<typeof makeWebhookReceiver>
  readonly organizationId: string
  readonly teamId: string
  readonly accountId: string
  readonly apiKey: string
  /** The environment of `postline mcp`: a home of its own (no stored login), the server and the API key. */
  readonly mcpEnv: Record<string, string>
}>() {}

/** A server, an organization with an API key, a team with a webhook account on a local receiver, and credits. */
const SetupLive = Layer.scoped(
  Setup,
  Effect.gen(function*() {
    const env = { ...(yield* freshDatabaseEnv), OUTBOUND_ALLOW_PRIVATE: "true", CREDIT_COSTS: JSON.stringify({ webhook: 1 }) }
    const receiver = yield* makeWebhookReceiver
    const server = yield* startServer(env)
    const asUser = callsAs(server, (yield* createUserWithToken(env)).token)
    const organization = created(yield* asUser("POST", "/v1/organizations", { name: "Stdio Co" }))
    const team = created(yield* asUser("POST", "/v1/teams", { organizationId: organization.id, name: "Social" }))
    const apiKey = created(yield* asUser("POST", `/v1/organizations/${organization.id}/api-keys`, { name: "Agent" })).key
    const account = created(yield* asUser("POST", `/v1/teams/${team.id}/social-accounts`, { provider: "webhook", url: `${receiver.url}/stdio` }))
    yield* grantCredits(env, organization.id, 3)
    const mcpEnv = {
      PATH: process.env.PATH ?? "",
      HOME: yield* scopedTempDir("postline-mcp-home-"),
      POSTLINE_URL: server.base,
      POSTLINE_API_KEY: apiKey
    }
    return { server, receiver, organizationId: organization.id, teamId: team.id, accountId: account.id, apiKey, mcpEnv }
  })
)

layer(SetupLive, { excludeTestServices: true, timeout: 120_000 })("postline mcp over stdio", (it) => {
  it.scoped("lists the 16 tools, reads, publishes to a webhook once (a retry with its key replays), and says errors as tool errors", () =>
    Effect.gen(function*() {
      const { accountId, mcpEnv, organizationId, receiver, teamId } = yield* Setup
      const { client, stderr, transportErrors } = yield* startMcp(mcpEnv)

      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools).toHaveLength(16)
      expect(tools.map((tool) => tool.name)).toContain("post_now")
      expect(client.getServerVersion()).toEqual({ name: "postline", version: "0.1.0" })

      const context = yield* success(client, "get_agent_context", {})
      expect(context.organizations.data.map((org: { id: string }) => org.id)).toEqual([organizationId])
      expect(yield* success(client, "get_credits", { organizationId })).toEqual({ balance: 3, reserved: 0, available: 3 })

      const draft = yield* success(client, "create_post", { teamId, content: "Sent through stdio" })
      const published = yield* success(client, "post_now", {
        teamId,
        postId: draft.id,
        socialAccountIds: [accountId],
        idempotencyKey: "stdio-first-publish"
      })
      expect(published).toMatchObject({
        postId: draft.id,
        outcome: "none_failed",
        results: [{ socialAccountId: accountId, status: "published" }],
        idempotencyKey: "stdio-first-publish",
        replayed: false
      })
      const delivered = yield* readUntil(
        Effect.sync(() => receiver.received.filter((event) => accountOf(event) === accountId).length),
        (count) => count >= 1,
        20
      )
      expect(delivered).toBe(1)
      const replay = yield* success(client, "post_now", {
        teamId,
        postId: draft.id,
        socialAccountIds: [accountId],
        idempotencyKey: "stdio-first-publish"
      })
      expect(replay).toEqual({ ...published, replayed: true })
      expect(receiver.received.filter((event) => accountOf(event) === accountId)).toHaveLength(1)

      const missing = crypto.randomUUID()
      expect(yield* call(client, "get_post", { teamId: missing, postId: draft.id }))
        .toEqual({ isError: true, value: { _tag: "NotFound", message: `Team ${missing} not found` } })
      const again = yield* call(client, "post_now", { teamId, postId: draft.id, socialAccountIds: [accountId] })
      expect(again.isError).toBe(true)
      expect(again.value._tag).toBe("Conflict")
      const invalid = yield* call(client, "list_posts", { teamId, limit: 0 })
      expect(invalid).toEqual({
        isError: true,
        value: {
          _tag: "InvalidArguments",
          message: "Invalid arguments: limit: must be a positive integer",
          issues: [{ path: ["limit"], message: "must be a positive integer" }]
        }
      })

      // Standard output carried the protocol alone.
      expect(transportErrors, stderr()).toEqual([])
    }))

  it.scoped("an API key the server refuses: the tools answer its 401 as a tool error", () =>
    Effect.gen(function*() {
      const { mcpEnv, teamId } = yield* Setup
      const { client, transportErrors } = yield* startMcp({ ...mcpEnv, POSTLINE_API_KEY: "plk_revoked-or-never-made" })
      const refused = yield* call(client, "list_posts", { teamId })
      expect(refused).toEqual({ isError: true, value: { _tag: "Unauthorized", message: "Invalid, revoked or expired API key" } })
      expect(transportErrors).toEqual([])
    }))
})
