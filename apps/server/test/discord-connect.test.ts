import { expect, layer } from "@effect/vitest"
import { maxThreadParts } from "@postline/domain"
import { ConfigProvider, Context, Effect, Layer, Logger } from "effect"
import { type DiscordFake, makeDiscordFake } from "./support/DiscordFake.js"
import { publishingTeam } from "./support/Publishing.js"
import { makeTestServer, raw } from "./support/TestServer.js"

class TheDiscordFake extends Context.Tag("test/TheDiscordFake")<TheDiscordFake, DiscordFake>() {}

const logged: Array<string> = []
const capturingLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ annotations, cause, message }) => logged.push(JSON.stringify({ message, annotations, cause })))
)

/** The server as configured with DISCORD_API_URL at the fake, its log captured. */
const DiscordServer = Layer.unwrapScoped(Effect.gen(function*() {
  const fake = yield* makeDiscordFake
  return makeTestServer(capturingLogger).pipe(
    Layer.merge(Layer.succeed(TheDiscordFake, fake)),
    Layer.provide(Layer.setConfigProvider(
      ConfigProvider.fromMap(new Map([["DISCORD_API_URL", fake.apiUrl]])).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
    ))
  )
}))

layer(DiscordServer, { excludeTestServices: true })("Discord through the HTTP API", (it) => {
  it.scoped("connect: a URL that is not a Discord webhook's is 400, a deleted webhook 400 credentials_not_verified", () =>
    Effect.gen(function*() {
      const fake = yield* TheDiscordFake
      const { call } = yield* publishingTeam()
      for (const webhookUrl of ["https://example.com/api/webhooks/1/x", `https://discord.com/api/webhooks/${fake.webhook.id}`, 42]) {
        const refused = yield* call("POST", "/social-accounts", { provider: "discord", webhookUrl })
        expect(refused.status, JSON.stringify(webhookUrl)).toBe(400)
        expect(refused.body).toMatchObject({
          _tag: "HttpApiDecodeError",
          message: expect.any(String),
          issues: [{ path: ["webhookUrl"], message: "must be a Discord webhook URL (https://discord.com/api/webhooks/<id>/<token>)" }]
        })
      }
      const gone = fake.addWebhook()
      fake.deleteWebhook(gone)
      const deleted = yield* call("POST", "/social-accounts", { provider: "discord", webhookUrl: fake.webhookUrl(gone) })
      expect(deleted.status).toBe(400)
      expect(deleted.body).toMatchObject({ _tag: "BadRequest", reason: "credentials_not_verified" })
      expect(deleted.body.message).toContain("it was deleted, or the URL is wrong")
      expect(JSON.stringify(deleted.body)).not.toContain(gone.token)
      expect((yield* call("GET", "/social-accounts")).body.data).toEqual([])
    }))

  it.scoped("connect, post-now a thread with a first comment: each part a message, in order, linked; then unpublish", () =>
    Effect.gen(function*() {
      const fake = yield* TheDiscordFake
      const { call, connect, credit, postNow } = yield* publishingTeam(20)
      const hook = yield* connect({ provider: "discord", webhookUrl: fake.webhookUrl(fake.webhook, "discordapp.com"), name: "News" })
      const account = (yield* call("GET", `/social-accounts/${hook.id}`)).body
      expect(account).toMatchObject({
        provider: "discord",
        handle: "Postline news",
        displayName: "News",
        profileUrl: `https://discord.com/channels/${fake.webhook.guildId}/${fake.webhook.channelId}`,
        status: "connected"
      })
      expect(hook.signingSecret).toBeNull()
      expect(JSON.stringify([hook, account])).not.toContain(fake.webhook.token)

      const post = (yield* call("POST", "/posts", {
        content: "1/2 Ping @everyone",
        thread: [{ content: "2/2 and more" }],
        firstComment: { content: "Comment" }
      })).body
      const answer = yield* postNow(post.id, [hook.id])
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      expect(answer.body.outcome).toBe("none_failed")
      const [result] = answer.body.results
      const sent = fake.messages.slice(-3)
      expect(sent.map(({ allowedMentions, content }) => [content, allowedMentions])).toEqual([
        ["1/2 Ping @everyone", { parse: [] }],
        ["2/2 and more", { parse: [] }],
        ["Comment", { parse: [] }]
      ])
      expect(result.parts.map((part: any) => part.externalId)).toEqual(sent.slice(0, 2).map(({ id }) => id))
      expect(result.firstComment).toMatchObject({ status: "published", externalId: sent[2]!.id })
      expect(result.url).toBe(`https://discord.com/channels/${fake.webhook.guildId}/${fake.webhook.channelId}/${sent[0]!.id}`)
      // One credit per message: two parts and a comment.
      expect((yield* credit).balance).toBe(20 - 3)

      const unpublished = yield* call("POST", `/posts/${post.id}/unpublish`, {})
      expect(unpublished.status, JSON.stringify(unpublished.body)).toBe(200)
      expect(sent.map(({ deleted }) => deleted)).toEqual([true, true, true])
      expect(logged.join("\n")).not.toContain(fake.webhook.token)
    }))

  it.scoped("a text over 2000 code points is refused before anything is sent", () =>
    Effect.gen(function*() {
      const fake = yield* TheDiscordFake
      const { call, connect, postNow } = yield* publishingTeam(20)
      const hook = yield* connect({ provider: "discord", webhookUrl: fake.webhookUrl() })
      const before = fake.messages.length
      const post = (yield* call("POST", "/posts", { content: "👍🏽".repeat(1000) + "!" })).body
      const answer = yield* postNow(post.id, [hook.id])
      expect(answer.body.results[0]).toMatchObject({
        status: "failed",
        error: { category: "invalid_content", message: "The text is 2001 characters long; the limit is 2000" }
      })
      expect(fake.messages.length).toBe(before)
    }))

  it.effect("GET /v1/providers lists Discord with its rules", () =>
    Effect.gen(function*() {
      const { admin } = yield* publishingTeam()
      const answer = yield* raw({ method: "GET", path: "/v1/providers", token: admin.token })
      const discord = answer.body.data.find((rules: any) => rules.provider === "discord")
      expect(discord).toEqual({
        provider: "discord",
        displayName: "Discord",
        connect: { method: "channel_webhook", description: expect.stringContaining("A webhook cannot reply"), oauth: null },
        text: { maxLength: 2000, counting: "code_points", urlLength: null, maxBytes: null },
        media: {
          maxItems: 10,
          contentTypes: ["image/jpeg", "image/png", "image/webp", "image/gif", "video/mp4"],
          maxImageBytes: 10 * 1024 * 1024,
          maxVideoBytes: 10 * 1024 * 1024,
          maxImagePixels: null,
          maxVideoPixels: null,
          maxAltTextLength: 1024,
          maxVideoSeconds: null,
          perAccount: false
        },
        features: { threads: true, maxThreadParts, firstComment: true, delete: true, analytics: false },
        credits: { perPublish: 1 },
        budgets: [{ limit: 5, cost: 1, seconds: 2 }, { limit: 30, cost: 1, seconds: 60 }]
      })
    }))
})
