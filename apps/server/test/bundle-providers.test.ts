import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { BlueskyNetwork } from "./support/BlueskyNetwork.js"
import { makeDiscordFake } from "./support/DiscordFake.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { makeWebhookReceiver } from "./support/Publishing.js"
import { callsAs, createUserWithToken, startServer } from "./support/ServerProcess.js"
import { makeTelegramFake } from "./support/TelegramFake.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"

/**
 * A team on the bundled server, as `pnpm start` runs it, allowed to reach this machine (the PDS, the fake
 * and the receiver listen on it); publishing costs nothing, so that no credits need granting.
 */
const teamOnBundledServer = (settings: Record<string, string> = {}) => Effect.gen(function*() {
  const env = {
    ...(yield* freshDatabaseEnv),
    OUTBOUND_ALLOW_PRIVATE: "true",
    CREDIT_COSTS: JSON.stringify({ bluesky: 0, mastodon: 0, telegram: 0, discord: 0, webhook: 0 }),
    ...settings
  }
  const owner = yield* createUserWithToken(env)
  const server = yield* startServer(env)
  const call = callsAs(server, owner.token)
  const organization = yield* call("POST", "/v1/organizations", { name: "Bundle" })
  const team = yield* call("POST", "/v1/teams", { organizationId: organization.body.id, name: "Providers" })
  expect(team.status).toBe(201)
  const teamCall = (method: string, suffix: string, json?: unknown, headers?: Record<string, string>) =>
    call(method, `/v1/teams/${team.body.id}${suffix}`, json, headers)
  return { server, call: teamCall }
})

// Each provider's client is code of the bundle, some of it in chunks loaded when first used: the sources
// passing their tests says nothing of how the bundle loads them.
layer(BlueskyNetwork.layer(), { excludeTestServices: true })("each provider through the bundled server", (it) => {
  it.scoped("connects, verifies and publishes to Bluesky (a real PDS), Mastodon (its fake) and a webhook", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const mastodon = yield* makeMastodonFake()
      const receiver = yield* makeWebhookReceiver
      const { call } = yield* teamOnBundledServer()
      const pds = yield* Effect.promise(() => network.createAccount({ displayName: "Alice Bundle", avatar: true }))

      const connected = {
        bluesky: yield* call("POST", "/social-accounts", {
          provider: "bluesky",
          handle: pds.handle,
          appPassword: pds.appPassword,
          serviceUrl: network.serviceUrl
        }),
        mastodon: yield* call("POST", "/social-accounts", { provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token }),
        webhook: yield* call("POST", "/social-accounts", { provider: "webhook", url: `${receiver.url}/hooks` })
      }
      for (const [provider, response] of Object.entries(connected)) {
        expect(response.status, JSON.stringify(response.body)).toBe(201)
        expect(response.body).toMatchObject({ provider, status: "connected", lastError: null })
      }
      // The profile read from the PDS: the avatar is a blob of the client's own classes.
      expect(connected.bluesky.body).toMatchObject({ handle: pds.handle, displayName: "Alice Bundle" })
      expect(connected.bluesky.body.avatarUrl).toMatch(new RegExp(`^${network.serviceUrl}/xrpc/com\\.atproto\\.sync\\.getBlob\\?did=`))
      expect(connected.mastodon.body).toMatchObject({ handle: "@alice@mastodon.test", displayName: "Alice" })

      for (const response of Object.values(connected)) {
        const verified = yield* call("POST", `/social-accounts/${response.body.id}/verify`)
        expect(verified.status, JSON.stringify(verified.body)).toBe(200)
        expect(verified.body).toMatchObject({ id: response.body.id, status: "connected", lastError: null })
      }
      expect(mastodon.requests.filter((request) => request.path === "/api/v1/accounts/verify_credentials")).toHaveLength(2)

      const text = `Sent through the bundle to every provider #postline ${crypto.randomUUID()}`
      const post = yield* call("POST", "/posts", { content: text })
      expect(post.status, JSON.stringify(post.body)).toBe(201)
      const ids = Object.values(connected).map((response) => response.body.id as string)
      const sent = yield* call("POST", `/posts/${post.body.id}/post-now`, { socialAccountIds: ids }, {
        "idempotency-key": crypto.randomUUID()
      })
      expect(sent.status, JSON.stringify(sent.body)).toBe(200)
      expect(sent.body.outcome).toBe("none_failed")
      expect(sent.body.results.map((result: any) => [result.socialAccountId, result.status])).toEqual(
        ids.map((id) => [id, "published"])
      )

      // Each provider has the post.
      const [skyResult] = sent.body.results
      expect(skyResult.externalId).toMatch(new RegExp(`^at://${pds.did}/app\\.bsky\\.feed\\.post/`))
      const record = yield* Effect.promise(() => network.getRecord(skyResult.externalId))
      expect(record.text).toBe(text)
      expect(record.facets).toMatchObject([{ features: [{ $type: "app.bsky.richtext.facet#tag", tag: "postline" }] }])
      expect(mastodon.statuses.map((status) => status.text)).toEqual([text])
      expect(receiver.received).toHaveLength(1)
      const event = receiver.verify(receiver.received[0], connected.webhook.body.signingSecret) as any
      expect(event).toMatchObject({ type: "post.published", data: { postId: post.body.id, text } })

      // A refusal by the PDS is told apart from other failures by the client's own error class.
      yield* Effect.promise(() => network.revokeAppPassword(pds))
      const refused = yield* call("POST", `/social-accounts/${connected.bluesky.body.id}/verify`)
      expect(refused.status, JSON.stringify(refused.body)).toBe(200)
      expect(refused.body).toMatchObject({ status: "reconnect_required", lastError: { category: "auth" } })
    }))

  it.scoped("connects, publishes a thread to and deletes from Telegram and Discord (their fakes), each at its configured API", () =>
    Effect.gen(function*() {
      const telegram = yield* makeTelegramFake
      const discord = yield* makeDiscordFake
      const { call } = yield* teamOnBundledServer({ TELEGRAM_API_URL: telegram.url, DISCORD_API_URL: discord.apiUrl })
      const connected = [
        yield* call("POST", "/social-accounts", { provider: "telegram", botToken: telegram.bot.token, chatId: "@postline_news" }),
        yield* call("POST", "/social-accounts", { provider: "discord", webhookUrl: discord.webhookUrl() })
      ]
      for (const response of connected) expect(response.status, JSON.stringify(response.body)).toBe(201)
      expect(connected.map((response) => response.body.provider)).toEqual(["telegram", "discord"])

      const thread = [{ content: "Through the bundle: part two" }]
      const post = yield* call("POST", "/posts", { content: "Through the bundle: part one", thread })
      expect(post.status, JSON.stringify(post.body)).toBe(201)
      const sent = yield* call("POST", `/posts/${post.body.id}/post-now`, {
        socialAccountIds: connected.map((response) => response.body.id)
      }, { "idempotency-key": crypto.randomUUID() })
      expect(sent.status, JSON.stringify(sent.body)).toBe(200)
      expect(sent.body.outcome).toBe("none_failed")
      const texts = ["Through the bundle: part one", "Through the bundle: part two"]
      const [first, second] = telegram.messagesOf(telegram.channel)
      expect([first?.text, second?.text]).toEqual(texts)
      expect(second?.replyTo).toBe(first?.message_id)
      expect(discord.messages.map((message) => message.content)).toEqual(texts)

      const removed = yield* call("POST", `/posts/${post.body.id}/unpublish`, {}, { "idempotency-key": crypto.randomUUID() })
      expect(removed.status, JSON.stringify(removed.body)).toBe(200)
      expect(telegram.messagesOf(telegram.channel)).toEqual([])
      expect(discord.messages.map((message) => message.deleted)).toEqual([true, true])
    }))

  it.scoped("credentials the PDS refuses, or a PDS that cannot be reached, give 400 with the reason", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const { call, server } = yield* teamOnBundledServer()
      const pds = yield* Effect.promise(() => network.createAccount())

      const unreachable = yield* call("POST", "/social-accounts", {
        provider: "bluesky",
        handle: "alice.bsky.social",
        appPassword: "23lc-call-b6x4-bind",
        serviceUrl: "https://pds.example.invalid/"
      })
      expect(unreachable.status, JSON.stringify(unreachable.body)).toBe(400)
      expect(unreachable.body).toMatchObject({
        _tag: "BadRequest",
        message: expect.stringMatching(/^The bluesky account could not be connected: .*pds\.example\.invalid/)
      })

      const wrongPassword = yield* call("POST", "/social-accounts", {
        provider: "bluesky",
        handle: pds.handle,
        appPassword: "aaaa-bbbb-cccc-dddd",
        serviceUrl: network.serviceUrl
      })
      expect(wrongPassword.status, JSON.stringify(wrongPassword.body)).toBe(400)
      expect(wrongPassword.body).toMatchObject({
        _tag: "BadRequest",
        message: expect.stringMatching(/^The bluesky account could not be connected: .*Invalid identifier or password/)
      })
      expect(server.lines.filter((line) => line.includes('"logLevel":"ERROR"') || line.includes("FATAL"))).toEqual([])
    }))
})
