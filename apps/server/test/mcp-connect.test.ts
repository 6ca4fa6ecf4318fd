import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { consentAtMastodon, makeMastodonFake } from "./support/MastodonFake.js"
import { call, organizationWithKey, success } from "./support/McpFlow.js"
import { freePort, type ServerProcess, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"
import { consentAtX, makeXFake, type XFake } from "./support/XFake.js"

/**
 * A server process that may reach this machine (the networks' fakes listen on it), with these settings. It knows
 * its address (PUBLIC_URL), where the networks send the user back.
 */
const serverWith = (settings: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const env = { ...(yield* freshDatabaseEnv), PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, OUTBOUND_ALLOW_PRIVATE: "true", ...settings }
    return { env, server: yield* startServer(env) }
  })

/** The server's settings for X, where X is its fake. */
const xSettings = (fake: XFake) => ({
  X_CLIENT_ID: fake.clientId,
  X_CLIENT_SECRET: fake.clientSecret,
  X_API_URL: fake.url,
  X_AUTHORIZE_URL: fake.authorizeUrl
})

/** The official SDK's client on the server's /mcp as the holder of this API key; closed with the scope. */
const connectAs = (server: ServerProcess, apiKey: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "mcp-connect-test", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${apiKey}` } } })
      )
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

/** An organization's agent on the server: its team, and its MCP client. */
const agentOn = (setup: Effect.Effect.Success<ReturnType<typeof serverWith>>) =>
  Effect.gen(function*() {
    const organization = yield* organizationWithKey(setup.server, setup.env, "Acme")
    return { ...organization, client: yield* connectAs(setup.server, organization.apiKey) }
  })

/** The user's browser following the network's redirect back to the server, which answers a page saying what was connected. */
const followBack = async (location: string) => {
  const back = await fetch(location, { redirect: "manual" })
  expect(back.status, await back.text()).toBe(200)
}

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describe("MCP tools connecting accounts by signing in: connect_account, then check_account_connect", () => {
  it.scopedLive("are listed with their input schemas; an X account (its FAKE) connects once the user approves, and a Mastodon one", () =>
    Effect.gen(function*() {
      const x = yield* makeXFake()
      const setup = yield* serverWith(xSettings(x))
      x.registerRedirectUri(`${setup.server.base}/v1/oauth/callback/x`)
      const { asKey, client, teamId } = yield* agentOn(setup)

      const { tools } = yield* Effect.promise(() => client.listTools())
      const byName = new Map(tools.map((tool) => [tool.name, tool]))
      const connect = byName.get("connect_account")!
      expect(connect.inputSchema).toMatchObject({ type: "object", required: ["teamId", "provider"], additionalProperties: false })
      expect(Object.keys(connect.inputSchema.properties!).sort()).toEqual(["handle", "instanceUrl", "provider", "teamId"])
      expect(connect.inputSchema.properties!.provider).toMatchObject({ enum: ["bluesky", "mastodon", "x"] })
      expect(connect.description).toContain("show the user the link and ask them to open it and approve, then call check_account_connect")
      expect(connect.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, openWorldHint: true })
      const check = byName.get("check_account_connect")!
      expect(check.inputSchema).toMatchObject({ type: "object", required: ["teamId", "connectId"], additionalProperties: false })
      expect(check.annotations).toMatchObject({ readOnlyHint: true })

      const started = yield* success(client, "connect_account", { teamId, provider: "x" })
      expect(Object.keys(started).sort()).toEqual(["authorizationUrl", "connectId", "expiresAt", "instructions"])
      expect(started.connectId).toMatch(uuidShape)
      expect(started.authorizationUrl.startsWith(`${x.authorizeUrl}?`)).toBe(true)
      expect(started.instructions).toContain("Show the user authorizationUrl")
      expect(started.instructions).toContain("call check_account_connect with this connectId")
      const waiting = yield* success(client, "check_account_connect", { teamId, connectId: started.connectId })
      expect(waiting).toMatchObject({ connectId: started.connectId, teamId, provider: "x", status: "pending", account: null })

      const back = yield* consentAtX(started.authorizationUrl, "allow")
      yield* Effect.promise(() => followBack(String(back)))
      const connected = yield* success(client, "check_account_connect", { teamId, connectId: started.connectId })
      expect(connected).toMatchObject({ status: "connected", error: null, account: { provider: "x", handle: `@${x.user.username}`, status: "connected" } })
      expect(connected).toEqual((yield* asKey("GET", `/v1/teams/${teamId}/social-accounts/connect/${started.connectId}`)).body)

      const mastodon = yield* makeMastodonFake()
      const toot = yield* success(client, "connect_account", { teamId, provider: "mastodon", instanceUrl: mastodon.url })
      expect(toot.authorizationUrl.startsWith(`${mastodon.url}/oauth/authorize?`)).toBe(true)
      const tootBack = yield* consentAtMastodon(toot.authorizationUrl, "approve")
      yield* Effect.promise(() => followBack(tootBack))
      expect(yield* success(client, "check_account_connect", { teamId, connectId: toot.connectId }))
        .toMatchObject({ status: "connected", account: { provider: "mastodon", handle: "@alice@mastodon.test" } })
    }))

  it.scopedLive("refuses arguments of another network, and X on a server without its settings names X_CLIENT_ID and X_CLIENT_SECRET", () =>
    Effect.gen(function*() {
      const { client, teamId } = yield* agentOn(yield* serverWith())
      for (const args of [{ provider: "mastodon" }, { provider: "x", handle: "alice.bsky.social" }, { provider: "bluesky", instanceUrl: "https://mastodon.invalid" }]) {
        const refused = yield* call(client, "connect_account", { teamId, ...args })
        expect(refused.isError, JSON.stringify(args)).toBe(true)
        expect(refused.value).toEqual({
          _tag: "InvalidArguments",
          message: "Give instanceUrl with provider mastodon, handle with provider bluesky, and neither with x"
        })
      }
      const unknown = yield* call(client, "connect_account", { teamId, provider: "myspace" })
      expect(unknown.value).toMatchObject({ _tag: "InvalidArguments", issues: [{ path: ["provider"] }] })

      const x = yield* call(client, "connect_account", { teamId, provider: "x" })
      expect(x.isError).toBe(true)
      expect(x.value).toMatchObject({ _tag: "Conflict", reason: "provider_not_configured" })
      expect(x.value.message).toContain("X_CLIENT_ID and X_CLIENT_SECRET")
    }))
})
