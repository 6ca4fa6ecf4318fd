import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Context, Effect, Layer, Logger, LogLevel } from "effect"
import { publishingTeam } from "./support/Publishing.js"
import { makeTestServer, raw, signUp } from "./support/TestServer.js"
import { makeTelegramFake, type TelegramFake } from "./support/TelegramFake.js"

class TheTelegramFake extends Context.Tag("test/TheTelegramFake")<TheTelegramFake, TelegramFake>() {}

/** A server whose TELEGRAM_API_URL is the fake's. */
const TelegramServer = Layer.unwrapScoped(Effect.gen(function*() {
  const fake = yield* makeTelegramFake
  return makeTestServer(Logger.minimumLogLevel(LogLevel.Error)).pipe(
    Layer.merge(Layer.succeed(TheTelegramFake, fake)),
    Layer.provide(Layer.setConfigProvider(
      ConfigProvider.fromMap(new Map([["TELEGRAM_API_URL", fake.url]])).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
    ))
  )
}))

layer(TelegramServer, { excludeTestServices: true })("Telegram through the HTTP API", (it) => {
  it.effect("connects a channel by its bot's token, keeps the token only encrypted, and the chat by its numeric id", () =>
    Effect.gen(function*() {
      const fake = yield* TheTelegramFake
      const team = yield* publishingTeam()
      const connected = yield* team.call("POST", "/social-accounts", { provider: "telegram", botToken: fake.bot.token, chatId: "@postline_news" })
      expect(connected.status, JSON.stringify(connected.body)).toBe(201)
      expect(connected.body).toMatchObject({
        provider: "telegram",
        handle: "@postline_news",
        displayName: "Postline News",
        avatarUrl: null,
        profileUrl: "https://t.me/postline_news",
        status: "connected",
        signingSecret: null
      })
      expect(JSON.stringify(connected.body)).not.toContain(fake.bot.token)
      // The chat is known by its numeric id, which renaming the channel keeps.
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ credentials: string; network_user_id: string }>`SELECT credentials, network_user_id FROM social_accounts
        WHERE id = ${connected.body.id}`
      expect(row!.credentials).not.toContain(fake.bot.token.split(":")[1])
      expect(row!.network_user_id).toBe(`${fake.bot.id}/${fake.channel.id}`)

      // A bot's token has nothing to revoke: removing the account forgets it, and Telegram is not called.
      const before = fake.requests.length
      const removed = yield* team.call("DELETE", `/social-accounts/${connected.body.id}`)
      expect(removed.status, JSON.stringify(removed.body)).toBe(200)
      expect(fake.requests).toHaveLength(before)
    }))

  it.effect("a token Telegram refuses is 400 credentials_not_verified saying what to fix; malformed fields are 400 before any call", () =>
    Effect.gen(function*() {
      const fake = yield* TheTelegramFake
      const team = yield* publishingTeam()
      const refused = yield* team.call("POST", "/social-accounts", {
        provider: "telegram", botToken: "7000000001:CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC", chatId: "@postline_news"
      })
      expect(refused.status).toBe(400)
      expect(refused.body).toMatchObject({ _tag: "BadRequest", reason: "credentials_not_verified" })
      expect(refused.body.message).toBe("The telegram account could not be connected: Telegram refused the bot token (Unauthorized): " +
        "give the bot's current token, from @BotFather")
      expect(refused.body.message).not.toContain("CCCCCCCC")

      fake.group.member = { status: "restricted", is_member: true, can_send_messages: false }
      const muted = yield* team.call("POST", "/social-accounts", { provider: "telegram", botToken: fake.bot.token, chatId: String(fake.group.id) })
      expect(muted.status).toBe(400)
      expect(muted.body.message).toContain("The bot may not send messages in the group")
      fake.group.member = { status: "member" }

      const before = fake.requests.length
      for (const [field, value] of [["chatId", "postline_news"], ["chatId", "@no"], ["chatId", "-100abc"], ["botToken", "not-a-token"]] as const) {
        const malformed = yield* team.call("POST", "/social-accounts", { provider: "telegram", botToken: fake.bot.token, chatId: "@postline_news", [field]: value })
        expect(malformed.status, `${field}: ${value}`).toBe(400)
        expect(malformed.body, `${field}: ${value}`).toMatchObject({ _tag: expect.any(String), message: expect.any(String) })
        expect(JSON.stringify(malformed.body)).not.toContain(fake.bot.token)
      }
      expect(fake.requests).toHaveLength(before)
    }))

  it.effect("post-now publishes to the channel: the text arrives as sent, the answer links the message; unpublish deletes it", () =>
    Effect.gen(function*() {
      const fake = yield* TheTelegramFake
      const team = yield* publishingTeam(10)
      const account = yield* team.connect({ provider: "telegram", botToken: fake.bot.token, chatId: "@postline_news" })
      const post = yield* team.draft("Hello, <b>Telegram</b> *readers*", [account.id])
      const sent = yield* team.postNow(post.id, [account.id])
      expect(sent.status, JSON.stringify(sent.body)).toBe(200)
      const message = fake.messagesOf(fake.channel).at(-1)!
      expect(message).toMatchObject({ kind: "text", text: "Hello, <b>Telegram</b> *readers*" })
      expect(sent.body.results).toMatchObject([{
        socialAccountId: account.id,
        status: "published",
        externalId: String(message.message_id),
        url: `https://t.me/postline_news/${message.message_id}`
      }])

      const taken = yield* team.call("POST", `/posts/${post.id}/unpublish`, {})
      expect(taken.status, JSON.stringify(taken.body)).toBe(200)
      expect(fake.messagesOf(fake.channel).map(({ message_id }) => message_id)).not.toContain(message.message_id)
    }))

  it.effect("GET /v1/providers lists Telegram with its rules", () =>
    Effect.gen(function*() {
      const user = yield* signUp()
      const answer = yield* raw({ method: "GET", path: "/v1/providers", token: user.token })
      const telegram = answer.body.data.find((rules: { provider: string }) => rules.provider === "telegram")
      expect(telegram).toEqual({
        provider: "telegram",
        displayName: "Telegram",
        connect: { method: "bot_token", description: expect.stringContaining("@BotFather"), oauth: null },
        text: { maxLength: 4096, counting: "utf16", urlLength: null, maxBytes: null },
        media: {
          maxItems: 10,
          contentTypes: ["image/jpeg", "image/png", "image/webp", "video/mp4"],
          maxImageBytes: 10 * 1024 * 1024,
          maxVideoBytes: 50 * 1024 * 1024,
          maxImagePixels: null,
          maxVideoPixels: null,
          maxAltTextLength: null,
          maxVideoSeconds: null,
          perAccount: false
        },
        features: { threads: true, maxThreadParts: expect.any(Number), firstComment: true, delete: true, analytics: false },
        credits: { perPublish: 1 },
        budgets: [{ limit: 1, cost: 1, seconds: 1 }, { limit: 20, cost: 1, seconds: 60 }]
      })
    }))
})
