import { describe, expect, it } from "@effect/vitest"
import { ConnectDiscord } from "@postline/domain"
import { Effect, Either, Redacted, Schema } from "effect"
import { discordAccount, discordAgainst, discordPost as post } from "../support/DiscordAdapter.js"
import { makeDiscordFake } from "../support/DiscordFake.js"
import { imageFacts, makeMediaFixtures } from "../support/MediaFixtures.js"

const setup = Effect.gen(function*() {
  const fake = yield* makeDiscordFake
  return { fake, discord: yield* discordAgainst(fake), account: discordAccount(fake) }
})

const MiB = 1024 * 1024
const path = (fake: { webhook: { id: string; token: string } }, rest = "") => `/api/webhooks/${fake.webhook.id}/${fake.webhook.token}${rest}`
const decodeConnect = Schema.decodeUnknownEither(ConnectDiscord)

describe("Discord (a channel's webhook, against a fake Discord that follows its documentation)", () => {
  it("the connect schema takes Discord's webhook URLs only, and keeps them Redacted", () => {
    const id = "1310000000000000001"
    const token = "a".repeat(68)
    for (const host of ["discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com", "canary.discordapp.com"]) {
      for (const version of ["", "/v10", "/v9"]) {
        const decoded = decodeConnect({ provider: "discord", webhookUrl: `https://${host}/api${version}/webhooks/${id}/${token}` })
        expect(Either.isRight(decoded), `${host}${version}`).toBe(true)
        expect(String(Either.getOrThrow(decoded).webhookUrl)).toBe("<redacted>")
      }
    }
    for (const refused of [
      `http://discord.com/api/webhooks/${id}/${token}`,
      `https://discord.com.evil.example/api/webhooks/${id}/${token}`,
      `https://evil.example/discord.com/api/webhooks/${id}/${token}`,
      `https://user@discord.com/api/webhooks/${id}/${token}`,
      `https://discord.com/api/webhooks/${id}`,
      `https://discord.com/api/webhooks/not-an-id/${token}`,
      `https://discord.com/api/webhooks/${id}/${token}?wait=true`,
      `https://discord.com/channels/${id}/${id}`
    ]) {
      expect(Either.isLeft(decodeConnect({ provider: "discord", webhookUrl: refused })), refused).toBe(true)
    }
  })

  it.scopedLive("verify reads the webhook with its token (no Authorization): id, name, avatar, the channel's link", () =>
    Effect.gen(function*() {
      const { account, discord, fake } = yield* setup
      expect(yield* discord.verify(account.credentials)).toEqual({
        networkUserId: fake.webhook.id,
        handle: "Postline news",
        displayName: "Postline news",
        avatarUrl: `https://cdn.discordapp.com/avatars/${fake.webhook.id}/${fake.webhook.avatar}.png`,
        profileUrl: `https://discord.com/channels/${fake.webhook.guildId}/${fake.webhook.channelId}`,
        limits: { maxLength: 2000, urlLength: null }
      })
      expect(fake.requests.map(({ method, path }) => `${method} ${path}`)).toEqual([`GET ${path(fake)}`])
      expect(fake.requests[0]!.headers.authorization).toBeUndefined()
      // The name the team gave is its displayName; a webhook without name or avatar is named by its channel.
      const bare = fake.addWebhook({ name: null, avatar: null })
      expect(yield* discord.verify(discordAccount(fake, bare, "Announcements").credentials)).toMatchObject({
        handle: `#${bare.channelId}`,
        displayName: "Announcements",
        avatarUrl: null
      })
    }))

  it.scopedLive("whatever host or version the URL names, the calls go to DISCORD_API_URL with its id and token", () =>
    Effect.gen(function*() {
      const { discord, fake } = yield* setup
      for (const [host, version] of [["discordapp.com", ""], ["canary.discord.com", "/v9"], ["ptb.discordapp.com", "/v10"]] as const) {
        const webhookUrl = Redacted.make(fake.webhookUrl(fake.webhook, host, version))
        expect((yield* discord.verify({ provider: "discord", webhookUrl })).networkUserId).toBe(fake.webhook.id)
      }
      expect(new Set(fake.requests.map(({ path }) => path))).toEqual(new Set([path(fake)]))
    }))

  it.scopedLive("verify: a deleted webhook and a wrong token are auth errors saying the webhook is gone or the URL wrong", () =>
    Effect.gen(function*() {
      const { discord, fake } = yield* setup
      const gone = fake.addWebhook()
      fake.deleteWebhook(gone)
      const deleted = yield* discord.verify(discordAccount(fake, gone).credentials).pipe(Effect.flip)
      expect(deleted).toMatchObject({ provider: "discord", category: "auth", retryable: false, providerStatus: 404 })
      expect(deleted.providerMessage).toMatch(/^Discord does not know this webhook \(Unknown Webhook\): it was deleted, or the URL is wrong/)
      const wrongToken = yield* discord.verify(discordAccount(fake, { ...fake.webhook, token: "b".repeat(68) }).credentials).pipe(Effect.flip)
      expect(wrongToken).toMatchObject({ category: "auth", providerStatus: 401 })
      expect(wrongToken.providerMessage).toContain("(Invalid Webhook Token): it was deleted, or the URL is wrong")
      // The token is a secret: no error names it.
      expect(JSON.stringify([deleted, wrongToken, deleted.message])).not.toContain(gone.token)
    }))

  it.scopedLive("publish: ?wait=true, the text, no mentions parsed; the message's id and its link in the channel", () =>
    Effect.gen(function*() {
      const { account, discord, fake } = yield* setup
      const published = yield* discord.publish(account, post("Hello @everyone and <@&1234567890123456789>"))
      const [message] = fake.messages
      expect(message).toMatchObject({ content: "Hello @everyone and <@&1234567890123456789>", allowedMentions: { parse: [] } })
      expect(published).toEqual({
        externalId: message!.id,
        url: `https://discord.com/channels/${fake.webhook.guildId}/${fake.webhook.channelId}/${message!.id}`
      })
      const sent = fake.requests.at(-1)!
      expect(`${sent.method} ${sent.path}`).toBe(`POST ${path(fake, "?wait=true")}`)
      expect(sent.headers["content-type"]).toBe("application/json")
      expect(sent.payload).toEqual({ content: "Hello @everyone and <@&1234567890123456789>", allowed_mentions: { parse: [] } })
      // The webhook's server, for the link, was read once, before the first message, not again.
      yield* discord.publish(account, post("Again"))
      expect(fake.requests.map(({ method }) => method)).toEqual(["GET", "POST", "POST"])
    }))

  it.scopedLive("text: 2000 code points and no more, as Discord counts them (an emoji with a skin tone is two)", () =>
    Effect.gen(function*() {
      const { account, discord, fake } = yield* setup
      const thumbs = "👍🏽"
      expect(discord.validate(thumbs.repeat(1000))).toEqual([])
      expect(discord.validate(`${thumbs.repeat(1000)}a`)).toMatchObject([{ code: "too_long", length: 2001, maxLength: 2000 }])
      expect(discord.validate("   ")).toMatchObject([{ code: "empty" }])
      yield* discord.publish(account, post(thumbs.repeat(1000)))
      expect([...fake.messages[0]!.content].length).toBe(2000)
      // Past the bound Discord refuses the form, which the text will never pass.
      const refused = yield* discord.publish(account, post("x".repeat(2001))).pipe(Effect.flip)
      expect(refused).toMatchObject({
        category: "invalid_content",
        retryable: false,
        providerStatus: 400,
        providerMessage: "Invalid Form Body: content: Must be 2000 or fewer in length."
      })
    }))

  it.scopedLive("images and a video go as files[n] with payload_json, their alt text as each attachment's description", () =>
    Effect.gen(function*() {
      const { account, discord, fake } = yield* setup
      const fixtures = yield* makeMediaFixtures
      const media = [
        yield* fixtures.image({ width: 640, height: 480, format: "jpeg", altText: "A lighthouse at dusk 🌅" }),
        yield* fixtures.image({ width: 300, height: 500, format: "png", altText: null }),
        yield* fixtures.video({ size: 10 * MiB, altText: "A clip at the bound" })
      ]
      const published = yield* discord.publish(account, post("Three files", media))
      const sent = fake.requests.at(-1)!
      expect(sent.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=/)
      expect(sent.payload).toEqual({
        content: "Three files",
        allowed_mentions: { parse: [] },
        attachments: [
          { id: 0, filename: `${media[0]!.assetId}.jpeg`, description: "A lighthouse at dusk 🌅" },
          { id: 1, filename: `${media[1]!.assetId}.png` },
          { id: 2, filename: `${media[2]!.assetId}.mp4`, description: "A clip at the bound" }
        ]
      })
      expect(fake.messages.at(-1)).toMatchObject({ id: published.externalId, content: "Three files" })
      expect(fake.messages.at(-1)!.attachments.map(({ contentType, description, field, sha256, size }) => ({ contentType, description, field, sha256, size })))
        .toEqual(media.map((medium, index) => ({
          contentType: medium.contentType,
          description: medium.altText,
          field: `files[${index}]`,
          sha256: medium.sha256,
          size: medium.size
        })))
      // One byte more than 10 MiB: refused before sending, and by Discord (413) if sent.
      const tooLarge = yield* fixtures.video({ size: 10 * MiB + 1 })
      expect(discord.validateMedia([tooLarge])).toEqual([{ code: "media", message: "Video 1 is 10.1 MB; Discord takes files up to 10 MB in a server without boosts" }])
      const refused = yield* discord.publish(account, post("Too large", [tooLarge])).pipe(Effect.flip)
      expect(refused).toMatchObject({ category: "invalid_content", providerStatus: 413, providerMessage: "Request entity too large" })
    }))

  it.scopedLive("media limits: 10 files of at most 10 MiB, alt text of at most 1024 characters, the types Postline stores", () =>
    Effect.gen(function*() {
      const { discord } = yield* setup
      const files = (count: number) => Array.from({ length: count }, () => imageFacts())
      const problemsOf = (media: Parameters<typeof discord.validateMedia>[0]) => discord.validateMedia(media).map(({ message }) => message)
      expect(problemsOf(files(10))).toEqual([])
      expect(problemsOf(files(11))).toEqual(["Discord takes at most 10 files in a message; this post has 11"])
      expect(problemsOf([imageFacts({ size: 10 * MiB })])).toEqual([])
      expect(problemsOf([imageFacts({ size: 10 * MiB + 1 })])).toHaveLength(1)
      expect(problemsOf([imageFacts({ altText: "a".repeat(1024) })])).toEqual([])
      expect(problemsOf([imageFacts({ altText: "a".repeat(1025) })])).toEqual(["Image 1's alt text is 1025 characters long; Discord takes 1024"])
      for (const contentType of ["image/jpeg", "image/png", "image/webp", "image/gif"]) expect(problemsOf([imageFacts({ contentType })])).toEqual([])
      expect(problemsOf([imageFacts({ contentType: "image/heic" })])).toEqual(["Image 1 is image/heic, which Postline does not send to Discord"])
    }))

  it.scopedLive("a thread: each later part is the next message in the channel, sent as any other (a webhook cannot reply)", () =>
    Effect.gen(function*() {
      const { account, discord, fake } = yield* setup
      expect(discord.threads).toBe("replies")
      const first = yield* discord.publish(account, post("1/2 The tide"))
      const second = yield* discord.publish(account, post("2/2 goes out", [], first.externalId))
      const comment = yield* discord.publish(account, post("Tables: https://example.com/tides", [], second.externalId))
      expect(fake.messages.map(({ content, id }) => [id, content])).toEqual([
        [first.externalId, "1/2 The tide"],
        [second.externalId, "2/2 goes out"],
        [comment.externalId, "Tables: https://example.com/tides"]
      ])
      // Nothing names the part before: no message_reference, which Discord's webhooks do not take.
      expect(fake.requests.filter(({ method }) => method === "POST").map(({ payload }) => Object.keys(payload).sort()))
        .toEqual(Array.from({ length: 3 }, () => ["allowed_mentions", "content"]))
    }))

  it.scopedLive("remove deletes each part's message; one Discord no longer has counts as deleted; a deleted webhook is auth", () =>
    Effect.gen(function*() {
      const { account, discord, fake } = yield* setup
      const parts = [yield* discord.publish(account, post("One")), yield* discord.publish(account, post("Two"))]
        .map(({ externalId }) => ({ externalId, reference: null }))
      const request = { postId: "post-1", idempotencyKey: "post-1:account-1", parts }
      yield* discord.remove(account, request)
      expect(fake.messages.map(({ deleted }) => deleted)).toEqual([true, true])
      expect(fake.requests.filter(({ method }) => method === "DELETE").map(({ path }) => path))
        .toEqual(parts.map(({ externalId }) => path(fake, `/messages/${externalId}`)))
      // Again: Discord answers 404 Unknown Message for each, which counts as done.
      yield* discord.remove(account, request)
      fake.deleteWebhook(fake.webhook)
      const gone = yield* discord.remove(account, request).pipe(Effect.flip)
      expect(gone).toMatchObject({ category: "auth", providerStatus: 404 })
    }))
})

