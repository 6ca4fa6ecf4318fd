import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { expect } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { accountWithNothingBought } from "./Billing.js"
import { makeLocalServer } from "./LocalServer.js"
import { makeMastodonFake } from "./MastodonFake.js"
import { noisyPng } from "./Media.js"
import { accountOf, grantCredits, readUntil } from "./ProcessPublishing.js"
import { makeWebhookReceiver } from "./Publishing.js"
import { callsAs, createUserWithToken, type ProcessResponse, type ServerProcess, startServer } from "./ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir } from "./TestDatabase.js"
import { inSeconds } from "./Waiting.js"

/**
 * The flows that Postline's MCP tools are tested with, over streamable HTTP (/mcp) and over stdio (`postline
 * mcp`) alike: each takes a way to connect the official SDK's client as an organization's API key.
 */

export const toolNames = [
  "get_agent_context",
  "list_organizations",
  "list_teams",
  "list_social_accounts",
  "connect_account",
  "check_account_connect",
  "list_providers",
  "create_post",
  "update_post",
  "get_post",
  "list_posts",
  "estimate_post",
  "post_now",
  "schedule_post",
  "unschedule_post",
  "unpublish_post",
  "get_credits",
  "list_posting_slots",
  "import_asset_from_url",
  "list_assets",
  "get_post_analytics",
  "get_account_analytics",
  "estimate_analytics_refresh",
  "refresh_post_analytics",
  "refresh_account_analytics",
  "get_billing"
]

/** The SDK's client connected as the holder of this API key, closed with the scope. */
export type ConnectAs = (apiKey: string) => Effect.Effect<Client, never, Scope.Scope>

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** A tool's result: whether it is an error, and its structured content, which its text says in JSON too. */
export const call = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.promise(async () => {
    const result = await client.callTool({ name, arguments: args })
    const content = result.content as Array<{ type: string; text: string }>
    expect(content).toHaveLength(1)
    expect(JSON.parse(content[0]!.text)).toEqual(result.structuredContent)
    return { isError: result.isError === true, value: result.structuredContent as any }
  })

/** A tool's successful result. */
export const success = (client: Client, name: string, args: Record<string, unknown>) =>
  Effect.map(call(client, name, args), (result) => {
    expect(result.isError, JSON.stringify(result.value)).toBe(false)
    return result.value
  })

export const created = (answer: ProcessResponse) => {
  if (answer.status !== 201) throw new Error(`setup failed: ${answer.status} ${answer.text}`)
  return answer.body
}

/** A new user's organization with a team and an API key of the organization. */
export const organizationWithKey = (server: ServerProcess, env: Record<string, string>, name: string) =>
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

export interface McpServerSetup {
  readonly env: Record<string, string>
  readonly server: ServerProcess
  readonly receiver: Effect.Effect.Success<typeof makeWebhookReceiver>
  /** A local server of media to import: `/photos/harbour.png` is a 64×48 PNG. */
  readonly mediaBase: string
}

/** A server process whose webhooks cost a credit and may reach this machine, as may media imports. */
export const mcpServerSetup: Effect.Effect<McpServerSetup, never, Scope.Scope> = Effect.gen(function*() {
  const env = {
    ...(yield* freshDatabaseEnv),
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

/**
 * Every tool once, as an organization's API key: the reads, media imported from a URL, a draft published to a
 * webhook once (a retry with its key replays, a second publish is a Conflict) and taken down, scheduled and unscheduled; a post
 * published to Mastodon (its FAKE: no real instance can be reached here), its analytics and its account's
 * refreshed for credits until they run out (402), and the billing state.
 */
export const everyToolOnce = (setup: McpServerSetup, connectAs: ConnectAs) =>
  Effect.gen(function*() {
    const { env, mediaBase, receiver, server } = setup
    const acme = yield* organizationWithKey(server, env, "Acme")
    const account = created(yield* acme.asKey("POST", `/v1/teams/${acme.teamId}/social-accounts`, {
      provider: "webhook",
      url: `${receiver.url}/acme`
    }))
    expect((yield* acme.asKey("PUT", `/v1/teams/${acme.teamId}/posting-slots`, { slots: [{ weekday: 3, time: "09:30" }] })).status)
      .toBe(200)
    yield* grantCredits(env, acme.organizationId, 5)
    const client = yield* connectAs(acme.apiKey)
    const teamId = acme.teamId
    const deliveries = () => receiver.received.filter((event) => accountOf(event) === account.id)
    const called = new Set<string>()
    const use = (name: string, args: Record<string, unknown>) => {
      called.add(name)
      return success(client, name, args)
    }

    const context = yield* use("get_agent_context", {})
    expect(context.user).toBeNull()
    expect(context.organizations.data.map((org: { id: string }) => org.id)).toEqual([acme.organizationId])
    expect(context.teams.data.map((team: { id: string }) => team.id)).toEqual([teamId])
    expect(context.defaults).toEqual({ organizationId: acme.organizationId, teamId })

    const organizations = yield* use("list_organizations", { limit: 10 })
    expect(organizations).toMatchObject({ total: 1, data: [{ id: acme.organizationId, name: "Acme" }] })
    const teams = yield* use("list_teams", { organizationId: acme.organizationId })
    expect(teams).toMatchObject({ total: 1, data: [{ id: teamId, name: "Acme Social" }] })
    const accounts = yield* use("list_social_accounts", { teamId })
    expect(accounts).toMatchObject({ total: 1, data: [{ id: account.id, provider: "webhook", status: "connected" }] })
    // The rules the API answers, this server's webhook publish at 1 credit (CREDIT_COSTS) among them.
    const providers = yield* use("list_providers", {})
    expect(providers).toEqual((yield* acme.asKey("GET", "/v1/providers")).body)
    expect(providers.data.map(({ provider, credits }: any) => [provider, credits.perPublish]))
      .toEqual([["bluesky", 1], ["mastodon", 1], ["x", 1], ["telegram", 1], ["discord", 1], ["webhook", 1]])
    expect(providers.data[1]).toMatchObject({ provider: "mastodon", text: { maxLength: 500, urlLength: 23 } })
    expect(yield* use("list_posting_slots", { teamId })).toEqual({ slots: [{ weekday: 3, time: "09:30" }] })
    expect(yield* use("get_credits", { organizationId: acme.organizationId }))
      .toEqual({ balance: 5, reserved: 0, available: 5 })

    const asset = yield* use("import_asset_from_url", {
      teamId,
      url: `${mediaBase}/photos/harbour.png`,
      altText: "The harbour at dawn"
    })
    expect(asset).toMatchObject({ teamId, name: "harbour.png", kind: "image", width: 64, height: 48, altText: "The harbour at dawn" })
    const assets = yield* use("list_assets", { teamId, kind: "image" })
    expect(assets).toMatchObject({ total: 1, data: [{ id: asset.id }] })

    const draft = yield* use("create_post", { teamId, content: "Low tide at the harbour", socialAccountIds: [account.id] })
    expect(draft).toMatchObject({ teamId, content: "Low tide at the harbour", status: "draft", socialAccountIds: [account.id] })
    const updated = yield* use("update_post", { teamId, postId: draft.id, content: "High tide at the harbour" })
    expect(updated).toMatchObject({ id: draft.id, content: "High tide at the harbour", status: "draft" })
    expect(yield* use("get_post", { teamId, postId: draft.id })).toMatchObject({ content: "High tide at the harbour" })
    const posts = yield* use("list_posts", { teamId, status: "draft" })
    expect(posts).toMatchObject({ total: 1, data: [{ id: draft.id }] })

    const estimate = yield* use("estimate_post", { teamId, postId: draft.id, socialAccountIds: [account.id] })
    expect(estimate).toEqual({
      total: 1,
      perAccount: [{ socialAccountId: account.id, credits: 1, publishes: 1, problems: [] }],
      available: 5,
      sufficient: true
    })

    const published = yield* use("post_now", { teamId, postId: draft.id, socialAccountIds: [account.id] })
    expect(published).toMatchObject({
      postId: draft.id,
      outcome: "none_failed",
      results: [{ socialAccountId: account.id, status: "published", creditsSpent: 1 }],
      replayed: false
    })
    expect(published.idempotencyKey).toMatch(uuidShape)
    expect(yield* readUntil(Effect.sync(() => deliveries().length), (count) => count >= 1)).toBe(1)
    expect(JSON.parse(deliveries()[0]!.body).data).toMatchObject({ postId: draft.id, text: "High tide at the harbour" })

    const replay = yield* use("post_now", {
      teamId,
      postId: draft.id,
      socialAccountIds: [account.id],
      idempotencyKey: published.idempotencyKey
    })
    expect(replay).toEqual({ ...published, replayed: true })
    const again = yield* call(client, "post_now", { teamId, postId: draft.id, socialAccountIds: [account.id] })
    expect(again).toMatchObject({ isError: true, value: { _tag: "Conflict", reason: "already_published" } })
    expect(deliveries()).toHaveLength(1)

    const later = yield* use("create_post", { teamId, content: "Tomorrow's tide table" })
    const scheduledAt = inSeconds(3600)
    const scheduled = yield* use("schedule_post", {
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
    expect(yield* use("get_credits", { organizationId: acme.organizationId }))
      .toEqual({ balance: 4, reserved: 1, available: 3 })
    const unscheduled = yield* use("unschedule_post", { teamId, postId: later.id })
    expect(unscheduled).toMatchObject({ id: later.id, status: "draft", scheduledAt: null })
    expect(yield* use("get_credits", { organizationId: acme.organizationId }))
      .toEqual({ balance: 4, reserved: 0, available: 4 })
    expect(deliveries()).toHaveLength(1)

    // Taken down from the webhook: a signed post.deleted to the receiver, and no credit given back.
    const unpublished = yield* use("unpublish_post", { teamId, postId: draft.id })
    expect(unpublished).toMatchObject({
      postId: draft.id,
      outcome: "none_failed",
      results: [{ socialAccountId: account.id, status: "deleted", error: null }],
      replayed: false
    })
    expect(JSON.parse(deliveries()[1]!.body)).toMatchObject({ type: "post.deleted", data: { postId: draft.id } })
    expect(yield* use("get_credits", { organizationId: acme.organizationId }))
      .toEqual({ balance: 4, reserved: 0, available: 4 })

    const mastodon = yield* makeMastodonFake()
    const toot = created(yield* acme.asKey("POST", `/v1/teams/${teamId}/social-accounts`, {
      provider: "mastodon",
      instanceUrl: mastodon.url,
      accessToken: mastodon.token
    }))
    // Connecting by signing in: the link for the person, and the connect waiting for them.
    const signIn = yield* use("connect_account", { teamId, provider: "mastodon", instanceUrl: mastodon.url })
    expect(signIn.authorizationUrl).toMatch(new RegExp(`^${mastodon.url}/oauth/authorize\\?`))
    expect(yield* use("check_account_connect", { teamId, connectId: signIn.connectId }))
      .toMatchObject({ connectId: signIn.connectId, status: "pending", account: null })
    const gulls = yield* use("create_post", { teamId, content: "Counting the gulls" })
    const tooted = yield* use("post_now", { teamId, postId: gulls.id, socialAccountIds: [toot.id] })
    expect(tooted.results).toMatchObject([{ socialAccountId: toot.id, status: "published", creditsSpent: 1 }])
    const statusId = tooted.results[0].externalId
    const target = { socialAccountId: toot.id, provider: "mastodon", externalId: statusId }
    expect(yield* use("get_post_analytics", { teamId, postId: gulls.id }))
      .toEqual({ postId: gulls.id, targets: [{ ...target, latest: null, series: [] }] })
    expect(yield* use("estimate_analytics_refresh", { teamId, postId: gulls.id }))
      .toEqual({ total: 1, perAccount: [{ socialAccountId: toot.id, credits: 1 }], available: 3, sufficient: true })

    mastodon.setCounts(statusId, { favourites_count: 7, reblogs_count: 2, replies_count: 1, quotes_count: 0 })
    const statusReads = () => mastodon.requests.filter(({ path }) => path.startsWith("/api/v1/statuses?"))
    const engagement = { takenAt: expect.any(String), likes: 7, reposts: 2, replies: 1, quotes: 0, views: null, linkClicks: 0 }
    const refreshed = yield* use("refresh_post_analytics", { teamId, postId: gulls.id, idempotencyKey: "gulls-refresh" })
    expect(refreshed).toEqual({
      postId: gulls.id,
      targets: [{ ...target, latest: engagement, series: [engagement] }],
      idempotencyKey: "gulls-refresh",
      replayed: false
    })
    // The same key again: the first answer, neither read nor paid a second time.
    expect(yield* use("refresh_post_analytics", { teamId, postId: gulls.id, idempotencyKey: "gulls-refresh" }))
      .toEqual({ ...refreshed, replayed: true })
    expect(statusReads()).toHaveLength(1)
    const { idempotencyKey: _key, replayed: _replayed, ...stored } = refreshed
    expect(yield* use("get_post_analytics", { teamId, postId: gulls.id, limit: 1 })).toEqual(stored)

    mastodon.setAccountCounts({ followers_count: 12, following_count: 3 })
    expect(yield* use("estimate_analytics_refresh", { teamId, socialAccountId: toot.id }))
      .toEqual({ total: 1, perAccount: [{ socialAccountId: toot.id, credits: 1 }], available: 2, sufficient: true })
    const counts = { takenAt: expect.any(String), followers: 12, following: 3, posts: 1 }
    const counted = yield* use("refresh_account_analytics", { teamId, socialAccountId: toot.id })
    expect(counted).toEqual({
      socialAccountId: toot.id,
      provider: "mastodon",
      latest: counts,
      series: [counts],
      idempotencyKey: expect.stringMatching(uuidShape),
      replayed: false
    })
    expect(yield* use("get_account_analytics", { teamId, socialAccountId: toot.id }))
      .toEqual({ socialAccountId: toot.id, provider: "mastodon", latest: counts, series: [counts] })
    const ledger = (yield* acme.asKey("GET", `/v1/organizations/${acme.organizationId}/credits/transactions?limit=100`)).body
    expect(
      ledger.data.filter((entry: { kind: string }) => entry.kind === "analytics")
        .map(({ amount, postId, socialAccountId }: any) => ({ amount, postId, socialAccountId }))
    ).toEqual([
      { amount: 1, postId: null, socialAccountId: toot.id },
      { amount: 1, postId: gulls.id, socialAccountId: toot.id }
    ])
    expect(yield* use("get_credits", { organizationId: acme.organizationId })).toEqual({ balance: 1, reserved: 0, available: 1 })

    // The last credit, then none: 402, nothing read.
    expect((yield* use("refresh_account_analytics", { teamId, socialAccountId: toot.id })).series).toHaveLength(2)
    const reads = mastodon.requests.length
    expect(yield* call(client, "refresh_post_analytics", { teamId, postId: gulls.id })).toEqual({
      isError: true,
      value: {
        _tag: "PaymentRequired",
        reason: "insufficient_credits",
        message: "Reading analytics needs 1 credit and the organization has 0 available. " +
          `Billing is off on this server, so an operator adds credits with \`pnpm admin credits grant --organization ${acme.organizationId} --amount 1\``
      }
    })
    expect(mastodon.requests).toHaveLength(reads)
    expect(yield* use("estimate_analytics_refresh", { teamId, postId: gulls.id }))
      .toEqual({
        total: 1,
        perAccount: [{ socialAccountId: toot.id, credits: 1 }],
        available: 0,
        sufficient: false,
        howToGetCredits: `Billing is off on this server, so an operator adds credits with ` +
          `\`pnpm admin credits grant --organization ${acme.organizationId} --amount 1\``
      })

    // An API key sees the whole state; without a payment provider nothing is on sale.
    expect(yield* use("get_billing", { organizationId: acme.organizationId })).toEqual({
      enabled: false,
      creditPacks: [],
      plan: null,
      credits: { balance: 0, reserved: 0, available: 0 },
      // Two publishes and three reads.
      account: accountWithNothingBought(5)
    })

    expect([...called].sort()).toEqual([...toolNames].sort())
  })

/**
 * Another organization's real team, post and credits, as the API key of an organization of another user: every
 * tool error carries the API's 404 NotFound, and nothing is made in that team.
 */
export const crossOrganizationRefused = (setup: McpServerSetup, connectAs: ConnectAs) =>
  Effect.gen(function*() {
    const { env, server } = setup
    const owner = yield* organizationWithKey(server, env, "Owner Co")
    const draft = created(yield* owner.asKey("POST", `/v1/teams/${owner.teamId}/posts`, { content: "Not yours" }))
    const other = yield* organizationWithKey(server, env, "Other Co")
    const client = yield* connectAs(other.apiKey)
    const notFound = { isError: true, value: { _tag: "NotFound", message: `Team ${owner.teamId} not found` } }

    expect(yield* call(client, "get_post", { teamId: owner.teamId, postId: draft.id })).toEqual(notFound)
    expect(yield* call(client, "create_post", { teamId: owner.teamId, content: "Sneaky" })).toEqual(notFound)
    expect(yield* call(client, "list_posts", { teamId: owner.teamId })).toEqual(notFound)
    const credits = yield* call(client, "get_credits", { organizationId: owner.organizationId })
    expect(credits).toMatchObject({ isError: true, value: { _tag: "NotFound" } })
    expect(yield* call(client, "get_post_analytics", { teamId: owner.teamId, postId: draft.id })).toEqual(notFound)
    // The owner's post through a team of the caller's own: the post is not found there, and nothing is charged.
    const postNotFound = { isError: true, value: { _tag: "NotFound", message: `Post ${draft.id} not found` } }
    expect(yield* call(client, "refresh_post_analytics", { teamId: other.teamId, postId: draft.id })).toEqual(postNotFound)
    expect(yield* call(client, "estimate_analytics_refresh", { teamId: other.teamId, postId: draft.id })).toEqual(postNotFound)
    expect(yield* call(client, "get_billing", { organizationId: owner.organizationId }))
      .toMatchObject({ isError: true, value: { _tag: "NotFound" } })
    // Nothing was made in the owner's team.
    const posts = (yield* owner.asKey("GET", `/v1/teams/${owner.teamId}/posts`)).body
    expect(posts.data.map((post: { id: string }) => post.id)).toEqual([draft.id])
  })

/** Arguments the schemas refuse: a tool error naming each wrong field, and nothing sent to the API. */
export const invalidArgumentsRefused = (setup: McpServerSetup, connectAs: ConnectAs) =>
  Effect.gen(function*() {
    const { env, server } = setup
    const strict = yield* organizationWithKey(server, env, "Strict Co")
    const client = yield* connectAs(strict.apiKey)

    const refused = yield* call(client, "create_post", { teamId: "nope", text: "Hello" })
    expect(refused.isError).toBe(true)
    expect(refused.value._tag).toBe("InvalidArguments")
    expect(refused.value.issues).toEqual([
      { path: ["text"], message: expect.stringContaining("is unexpected") },
      { path: ["teamId"], message: "must be a UUID (8-4-4-4-12 hexadecimal digits)" },
      { path: ["content"], message: "is missing" }
    ])
    expect(refused.value.message).toMatch(/^Invalid arguments: text: is unexpected.*; teamId: must be a UUID.*; content: is missing$/)

    const blank = yield* call(client, "create_post", { teamId: strict.teamId, content: "   " })
    expect(blank).toEqual({
      isError: true,
      value: {
        _tag: "InvalidArguments",
        message: "Invalid arguments: content: must be 1 to 10000 characters, not blank",
        issues: [{ path: ["content"], message: "must be 1 to 10000 characters, not blank" }]
      }
    })
    expect(yield* call(client, "list_posts", { teamId: strict.teamId, limit: 0 })).toEqual({
      isError: true,
      value: {
        _tag: "InvalidArguments",
        message: "Invalid arguments: limit: must be a positive integer",
        issues: [{ path: ["limit"], message: "must be a positive integer" }]
      }
    })
    const both = yield* call(client, "schedule_post", {
      teamId: strict.teamId,
      postId: crypto.randomUUID(),
      socialAccountIds: [crypto.randomUUID()],
      scheduledAt: inSeconds(3600),
      slot: "next"
    })
    expect(both).toEqual({ isError: true, value: { _tag: "InvalidArguments", message: "Give exactly one of scheduledAt or slot" } })
    const neither = yield* call(client, "estimate_analytics_refresh", { teamId: strict.teamId })
    expect(neither).toEqual({ isError: true, value: { _tag: "InvalidArguments", message: "Give exactly one of postId or socialAccountId" } })
    expect(yield* call(client, "get_post_analytics", { teamId: strict.teamId, postId: crypto.randomUUID(), limit: 1001, before: "yesterday" }))
      .toEqual({
        isError: true,
        value: {
          _tag: "InvalidArguments",
          message: "Invalid arguments: limit: must be a whole number from 1 to 1000; " +
            "before: must be an ISO 8601 instant with an offset, e.g. 2027-01-31T09:00:00+01:00",
          issues: [
            { path: ["limit"], message: "must be a whole number from 1 to 1000" },
            { path: ["before"], message: "must be an ISO 8601 instant with an offset, e.g. 2027-01-31T09:00:00+01:00" }
          ]
        }
      })
    expect((yield* strict.asKey("GET", `/v1/teams/${strict.teamId}/posts`)).body.total).toBe(0)
  })
