import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { makeMediaFixtures } from "../support/MediaFixtures.js"
import { inGroup, methods, post, setup } from "../support/TelegramSetup.js"

describe("Telegram (Bot API, against a fake Telegram that follows its documentation)", () => {
  it.scopedLive("verify: the bot, the channel and the bot's rights there; the profile keeps the numeric chat id", () =>
    Effect.gen(function*() {
      const { account, fake, telegram } = yield* setup
      expect(yield* telegram.verify(account.credentials)).toEqual({
        networkUserId: `${fake.bot.id}/${fake.channel.id}`,
        handle: "@postline_news",
        displayName: "Postline News",
        avatarUrl: null,
        profileUrl: "https://t.me/postline_news",
        limits: { maxLength: 4096, urlLength: null }
      })
      expect(fake.requests.map(({ method, parameters }) => ({ method, parameters }))).toEqual([
        { method: "getMe", parameters: {} },
        { method: "getChat", parameters: { chat_id: "@postline_news" } },
        { method: "getChatMember", parameters: { chat_id: fake.channel.id, user_id: fake.bot.id } }
      ])
    }))

  it.scopedLive("verify: a group by its numeric id has its title for handle, no link, and the name given for displayName", () =>
    Effect.gen(function*() {
      const setting = yield* setup
      const credentials = { ...inGroup(setting).credentials, name: "Our team" }
      expect(yield* setting.telegram.verify(credentials)).toMatchObject({
        networkUserId: `${setting.fake.bot.id}/${setting.fake.group.id}`,
        handle: "Postline Team",
        displayName: "Our team",
        profileUrl: null
      })
    }))

  it.scopedLive("verify refuses, saying what to fix: the token, the chat, the bot's rights, a private chat", () =>
    Effect.gen(function*() {
      const { account, fake, telegram } = yield* setup
      const refusal = (credentials: Partial<typeof account.credentials>) =>
        telegram.verify({ ...account.credentials, ...credentials }).pipe(Effect.flip)
      expect(yield* refusal({ botToken: Redacted.make("7000000001:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA") })).toMatchObject({
        category: "auth", providerStatus: 401, providerMessage: "Telegram refused the bot token (Unauthorized): give the bot's current token, from @BotFather"
      })
      expect((yield* refusal({ chatId: "@nobody_here" })).providerMessage).toMatch(/^Bad Request: chat not found\. Add the bot to the chat/)

      fake.channel.member = { status: "administrator", can_post_messages: false }
      expect(yield* refusal({})).toMatchObject({
        category: "auth",
        providerMessage: "The bot is not an administrator of the channel allowed to post messages: make it one, with the right to post messages"
      })
      fake.channel.member = { status: "left" }
      expect(yield* refusal({})).toMatchObject({ category: "auth", providerStatus: 403, providerMessage: expect.stringMatching(/^Forbidden: bot is not a member of the channel chat\. Add the bot/) })

      const group = { chatId: String(fake.group.id) }
      fake.group.member = { status: "restricted", is_member: true, can_send_messages: false }
      expect((yield* refusal(group)).providerMessage).toBe("The bot may not send messages in the group: allow it to (or make it an administrator)")
      fake.group.member = { status: "member" }
      fake.group.permissions = { can_send_messages: false }
      expect((yield* refusal(group)).providerMessage).toBe("The bot may not send messages in the group: allow it to (or make it an administrator)")
      fake.group.member = { status: "administrator" }
      expect(yield* telegram.verify({ ...account.credentials, ...group })).toMatchObject({ handle: "Postline Team" })
      fake.group.member = { status: "kicked" }
      expect((yield* refusal(group)).providerMessage).toMatch(/^The bot is not in the group\. Add the bot/)

      fake.addChat({ id: 42, type: "private", member: { status: "member" } })
      expect((yield* refusal({ chatId: "42" })).providerMessage).toBe("42 is a private chat with a person: Postline posts to a channel or a group")
    }))

  it.scopedLive("a text goes as plain text (no parse_mode), and answers its message id and its public link", () =>
    Effect.gen(function*() {
      const setting = yield* setup
      const { account, fake, telegram } = setting
      const text = "<b>Not bold</b> *nor this* [a](https://example.com)"
      const published = yield* telegram.publish(account, post(text))
      const [message] = fake.messagesOf(fake.channel)
      expect(message).toMatchObject({ kind: "text", text })
      expect(message!.parseMode).toBeUndefined()
      expect(fake.requests.at(-1)).toMatchObject({ method: "sendMessage", contentType: "application/json", parameters: { chat_id: "@postline_news", text } })
      expect(Object.keys(fake.requests.at(-1)!.parameters).sort()).toEqual(["chat_id", "text"])
      expect(published).toEqual({ externalId: String(message!.message_id), url: `https://t.me/postline_news/${message!.message_id}` })
      // A group without a public username has no link.
      expect((yield* telegram.publish(inGroup(setting), post("In the group"))).url).toBeNull()
    }))

  it.scopedLive("text at and past 4096 UTF-16 code units: validate refuses what the fake Telegram refuses", () =>
    Effect.gen(function*() {
      const { account, telegram } = yield* setup
      // An emoji beyond the Basic Multilingual Plane counts two.
      for (const [fits, over] of [["a".repeat(4096), "a".repeat(4097)], ["🦋".repeat(2048), "🦋".repeat(2048) + "!"]] as const) {
        expect(telegram.validate(fits)).toEqual([])
        expect(telegram.validate(over)).toEqual([{ code: "too_long", message: "The text is 4097 characters long; the limit is 4096", length: 4097, maxLength: 4096 }])
        yield* telegram.publish(account, post(fits))
        expect(yield* telegram.publish(account, post(over)).pipe(Effect.flip)).toMatchObject({
          category: "invalid_content", retryable: false, providerStatus: 400, providerMessage: "Bad Request: message is too long"
        })
      }
      expect(telegram.validate(" \n")).toMatchObject([{ code: "empty" }])
    }))

  it.scopedLive("a photo and a video are uploaded as multipart, each with the text as its caption", () =>
    Effect.gen(function*() {
      const { account, fake, telegram } = yield* setup
      const fixtures = yield* makeMediaFixtures
      const photo = yield* fixtures.image({ width: 64, height: 48, format: "jpeg", altText: "Not sent: Telegram has no alt text" })
      const clip = yield* fixtures.video({ size: 20_000 })
      const first = yield* telegram.publish(account, post("A photo", [photo]))
      const second = yield* telegram.publish(account, post("A clip", [clip]))
      expect(methods(fake)).toEqual(["sendPhoto", "sendVideo"])
      const [sentPhoto, sentVideo] = fake.requests
      expect(sentPhoto!.contentType).toMatch(/^multipart\/form-data; boundary=/)
      expect(sentPhoto!.parameters).toEqual({ chat_id: "@postline_news", caption: "A photo" })
      expect(sentPhoto!.files).toEqual([expect.objectContaining({ field: "photo", name: "file1.jpeg", size: photo.size, sha256: photo.sha256 })])
      expect(sentVideo!.files).toEqual([expect.objectContaining({ field: "video", name: "file1.mp4", size: clip.size, sha256: clip.sha256 })])
      expect(fake.messagesOf(fake.channel).map(({ caption, kind, message_id }) => ({ caption, kind, id: String(message_id) }))).toEqual([
        { caption: "A photo", kind: "photo", id: first.externalId },
        { caption: "A clip", kind: "video", id: second.externalId }
      ])
      expect(first.reference).toBeUndefined()
    }))

  it.scopedLive("2 to 10 media go as one album (sendMediaGroup), the caption on the first; every message id is kept", () =>
    Effect.gen(function*() {
      const { account, fake, telegram } = yield* setup
      const fixtures = yield* makeMediaFixtures
      const media = [
        yield* fixtures.image({ width: 32, height: 32, format: "png" }),
        yield* fixtures.video({ size: 5_000 }),
        yield* fixtures.image({ width: 32, height: 32, format: "webp" })
      ]
      const published = yield* telegram.publish(account, post("An album", media))
      const [request] = fake.requests
      expect(request).toMatchObject({ method: "sendMediaGroup", parameters: { chat_id: "@postline_news" } })
      expect(JSON.parse(request!.parameters.media as string)).toEqual([
        { type: "photo", media: "attach://file1", caption: "An album" },
        { type: "video", media: "attach://file2" },
        { type: "photo", media: "attach://file3" }
      ])
      expect(request!.files.map(({ field, sha256 }) => ({ field, sha256 }))).toEqual(media.map(({ sha256 }, index) => ({ field: `file${index + 1}`, sha256 })))
      const sent = fake.messagesOf(fake.channel)
      expect(sent.map(({ caption, mediaGroupId }) => ({ caption, group: mediaGroupId !== undefined }))).toEqual([
        { caption: "An album", group: true }, { caption: undefined, group: true }, { caption: undefined, group: true }
      ])
      expect(published).toEqual({
        externalId: String(sent[0]!.message_id),
        url: `https://t.me/postline_news/${sent[0]!.message_id}`,
        reference: sent.map(({ message_id }) => message_id).join(",")
      })
    }))

  it.scopedLive("a caption of 1024 goes with the media; a longer text follows them, replying to them, and names the part", () =>
    Effect.gen(function*() {
      const { account, fake, telegram } = yield* setup
      const photo = yield* (yield* makeMediaFixtures).image({ width: 16, height: 16 })
      yield* telegram.publish(account, post("c".repeat(1024), [photo]))
      expect(fake.messagesOf(fake.channel).map(({ caption }) => caption)).toEqual(["c".repeat(1024)])

      const long = "t".repeat(1025)
      const published = yield* telegram.publish(account, post(long, [photo]))
      const [, media, text] = fake.messagesOf(fake.channel)
      expect(methods(fake)).toEqual(["sendPhoto", "sendPhoto", "sendMessage"])
      expect(fake.requests[1]!.parameters.caption).toBeUndefined()
      expect(text).toMatchObject({ kind: "text", text: long, replyTo: media!.message_id })
      expect(published).toMatchObject({ externalId: String(text!.message_id), reference: `${media!.message_id},${text!.message_id}` })
    }))

  it.scopedLive("when the text after the media is refused, the media are taken down again and the error is the text's", () =>
    Effect.gen(function*() {
      const { account, fake, telegram } = yield* setup
      const photo = yield* (yield* makeMediaFixtures).image({ width: 16, height: 16 })
      fake.floodNext(7, "sendMessage")
      const error = yield* telegram.publish(account, post("t".repeat(2000), [photo])).pipe(Effect.flip)
      expect(error).toMatchObject({ category: "rate_limited", retryable: true, retryAfterSeconds: 7, providerStatus: 429 })
      expect(methods(fake)).toEqual(["sendPhoto", "sendMessage", "deleteMessages"])
      expect(fake.messagesOf(fake.channel)).toEqual([])
    }))

  it.scopedLive("a thread: each part replies to the part before (reply_parameters), media parts too; a reply to a message gone is refused", () =>
    Effect.gen(function*() {
      const { account, fake, telegram } = yield* setup
      const first = yield* telegram.publish(account, post("1/ a thread"))
      const second = yield* telegram.publish(account, post("2/ and more", [], first.externalId))
      expect(fake.requests.at(-1)!.parameters.reply_parameters).toEqual({ message_id: Number(first.externalId) })
      const photo = yield* (yield* makeMediaFixtures).image({ width: 16, height: 16 })
      const third = yield* telegram.publish(account, post("3/ a picture", [photo], second.externalId))
      expect(JSON.parse(fake.requests.at(-1)!.parameters.reply_parameters as string)).toEqual({ message_id: Number(second.externalId) })
      expect(fake.messagesOf(fake.channel).map(({ message_id, replyTo }) => [String(message_id), replyTo && String(replyTo)])).toEqual([
        [first.externalId, undefined], [second.externalId, first.externalId], [third.externalId, second.externalId]
      ])

      yield* telegram.remove(account, { postId: "post-1", idempotencyKey: "k", parts: [{ externalId: first.externalId, reference: null }] })
      expect(yield* telegram.publish(account, post("4/ too late", [], first.externalId)).pipe(Effect.flip)).toMatchObject({
        category: "invalid_content", providerStatus: 400, providerMessage: "Bad Request: message to be replied not found"
      })
    }))

  it.scopedLive("remove deletes every message of every part, 100 ids a call; messages already gone count as deleted", () =>
    Effect.gen(function*() {
      const { account, fake, telegram } = yield* setup
      const fixtures = yield* makeMediaFixtures
      const album = [yield* fixtures.image({ width: 16, height: 16 }), yield* fixtures.image({ width: 16, height: 16 })]
      const first = yield* telegram.publish(account, post("one", album))
      const second = yield* telegram.publish(account, post("two", [], first.externalId))
      const parts = [first, second].map(({ externalId, reference }) => ({ externalId, reference: reference ?? null }))
      yield* telegram.remove(account, { postId: "post-1", idempotencyKey: "k", parts })
      expect(fake.messagesOf(fake.channel)).toEqual([])
      expect(fake.requests.at(-1)!.parameters.message_ids).toEqual([...first.reference!.split(","), second.externalId].map(Number))
      yield* telegram.remove(account, { postId: "post-1", idempotencyKey: "k", parts })

      const many = { externalId: "1", reference: Array.from({ length: 150 }, (_, index) => index + 1).join(",") }
      const before = fake.requests.length
      yield* telegram.remove(account, { postId: "post-1", idempotencyKey: "k", parts: [many] })
      expect(fake.requests.slice(before).map(({ parameters }) => (parameters.message_ids as Array<number>).length)).toEqual([100, 50])
    }))

  it.scopedLive("remove after 48 hours: refused, saying why, unless the bot may delete messages in the chat", () =>
    Effect.gen(function*() {
      const { account, fake, telegram } = yield* setup
      const published = yield* telegram.publish(account, post("Old news"))
      fake.age(fake.channel, Number(published.externalId), 49)
      const parts = [{ externalId: published.externalId, reference: null }]
      const refused = yield* telegram.remove(account, { postId: "post-1", idempotencyKey: "k", parts }).pipe(Effect.flip)
      expect(refused).toMatchObject({ category: "invalid_content", retryable: false, providerStatus: 400 })
      expect(refused.providerMessage).toBe("Bad Request: message can't be deleted: Telegram lets a bot delete its messages only within 48 " +
        "hours of sending them, unless it is an administrator of the chat allowed to delete messages: delete them in Telegram, or give the bot that right")
      fake.channel.member = { ...fake.channel.member, can_delete_messages: true }
      yield* telegram.remove(account, { postId: "post-1", idempotencyKey: "k", parts })
      expect(fake.messagesOf(fake.channel)).toEqual([])
    }))
})
