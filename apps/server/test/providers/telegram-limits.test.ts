import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Redacted } from "effect"
import { ProviderBudgets } from "../../src/Providers/Budgets.js"
import type { PublishMedia } from "../../src/Providers/SocialProvider.js"
import { TelegramSettings } from "../../src/Providers/TelegramSettings.js"
import { makeMediaFixtures } from "../support/MediaFixtures.js"
import { inGroup, MB, post, setup, telegramAgainst } from "../support/TelegramSetup.js"

describe("Telegram's errors, limits and settings (against a fake Telegram that follows its documentation)", () => {
  it.scopedLive("maps Telegram's answers: 401 and 404 auth, 403 auth, 429 with retry_after, 5xx transient, 400 invalid_content, a migrated group", () =>
    Effect.gen(function*() {
      const setting = yield* setup
      const { account, fake, telegram } = setting
      const publish = (to = account) => telegram.publish(to, post("Hello")).pipe(Effect.flip)
      const wrongToken = { ...account, credentials: { ...account.credentials, botToken: Redacted.make("7000000001:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB") } }
      expect(yield* publish(wrongToken)).toMatchObject({ category: "auth", retryable: false, providerStatus: 401 })
      fake.answerNext(404, "Not Found")
      expect(yield* publish()).toMatchObject({ category: "auth", providerStatus: 404, providerMessage: expect.stringContaining("@BotFather") })
      fake.group.member = { status: "kicked" }
      expect(yield* publish(inGroup(setting))).toMatchObject({
        category: "auth", providerStatus: 403, providerMessage: expect.stringMatching(/^Forbidden: bot was kicked from the group chat\. Add the bot to the chat/)
      })
      fake.floodNext(12)
      expect(yield* publish()).toMatchObject({ category: "rate_limited", retryable: true, retryAfterSeconds: 12, providerStatus: 429 })
      fake.answerNext(502, "Bad Gateway")
      expect(yield* publish()).toMatchObject({ category: "transient", retryable: true, providerStatus: 502 })
      fake.answerNext(400, "Bad Request: something else")
      expect(yield* publish()).toMatchObject({ category: "invalid_content", retryable: false, providerMessage: "Bad Request: something else" })

      const old = fake.addChat({ id: -4001, type: "group", title: "Old group", member: { status: "member" }, migratedTo: -1005550001 })
      const migrated = yield* publish({ ...account, credentials: { ...account.credentials, chatId: String(old.id) } })
      expect(migrated).toMatchObject({
        category: "auth",
        providerMessage: "Bad Request: group chat was upgraded to a supergroup chat: the group became a supergroup, whose chat id is " +
          "-1005550001; update the account's chatId to it"
      })
    }))

  it.scopedLive("no answer within the timeout is transient; the token never shows in what is kept of an answer", () =>
    Effect.gen(function*() {
      const { account, fake } = yield* setup
      const impatient = yield* telegramAgainst(fake, { totalTimeoutMillis: 300 })
      fake.stallNext()
      expect(yield* impatient.publish(account, post("Hello")).pipe(Effect.flip)).toMatchObject({ category: "transient", retryable: true })
      fake.answerNext(502, `<html>upstream failed for /bot${fake.bot.token}/sendMessage</html>`, { raw: true })
      const error = yield* impatient.publish(account, post("Hello")).pipe(Effect.flip)
      expect(error.providerMessage).toBe("<html>upstream failed for /bot<token>/sendMessage</html>")
    }))

  it.scopedLive("the production guard refuses a loopback Telegram before any call", () =>
    Effect.gen(function*() {
      const { account, fake } = yield* setup
      const guarded = yield* telegramAgainst(fake, { allowPrivate: false })
      expect(yield* guarded.verify(account.credentials).pipe(Effect.flip)).toMatchObject({ category: "unknown", retryable: false })
      expect(fake.requests).toEqual([])
    }))

  it.scopedLive("validateMedia: 10 items; photos (JPEG, PNG, WebP) 10 MB, sides 10000 together, ratio 20; videos 50 MB; no GIF", () =>
    Effect.gen(function*() {
      const { account, fake, telegram } = yield* setup
      const image = (facts: Partial<PublishMedia> = {}) => ({ kind: "image" as const, contentType: "image/jpeg", size: 1000, width: 100, height: 100, altText: null, ...facts })
      const video = (size: number) => ({ ...image({ kind: "video", contentType: "video/mp4" }), size })
      const messages = (media: ReadonlyArray<ReturnType<typeof image>>) => telegram.validateMedia(media).map(({ message }) => message)
      expect(telegram.validateMedia([...Array.from({ length: 8 }, () => image()), image({ contentType: "image/png" }), image({ contentType: "image/webp" })])).toEqual([])
      expect(messages(Array.from({ length: 11 }, () => image()))).toEqual(["Telegram takes at most 10 images and videos in a post; this post has 11"])
      expect(telegram.validateMedia([image({ size: 10 * MB }), video(50 * MB), image({ width: 5000, height: 5000 }), image({ width: 2000, height: 100 })])).toEqual([])
      expect(messages([image({ size: 10 * MB + 1 }), video(50 * MB + 1), image({ width: 5001, height: 4999 + 1 }), image({ width: 2001, height: 100 })])).toEqual([
        "Image 1 is 10.1 MB; Telegram takes images up to 10 MB",
        "Video 2 is 50.1 MB; Telegram takes videos up to 50 MB",
        "Image 3 is 5001×5000 pixels; Telegram takes photos whose width and height add up to at most 10000",
        "Image 4 is 2001×100 pixels; Telegram takes photos at most 20 times as wide as tall, or as tall as wide"
      ])
      expect(messages([image({ contentType: "image/gif" }), image({ contentType: "image/heic" })])).toEqual([
        "Image 1 is a GIF, which Telegram shows as an animation: Postline sends Telegram photos and videos only",
        "Image 2 is image/heic, which Telegram does not take"
      ])
      // The fake Telegram refuses a photo past 10 MB, as validateMedia does.
      const large = { ...(yield* (yield* makeMediaFixtures).video({ size: 10 * MB + 1 })), kind: "image" as const, contentType: "image/jpeg" }
      expect(yield* telegram.publish(account, post("Too large", [large])).pipe(Effect.flip)).toMatchObject({
        category: "invalid_content", providerStatus: 400, providerMessage: "Bad Request: file is too big"
      })
      expect(fake.messagesOf(fake.channel)).toEqual([])
    }))

  it.effect("budgets: a message a second and 20 a minute per chat, unless PROVIDER_BUDGETS says otherwise for telegram", () =>
    Effect.gen(function*() {
      const windows = (env: Record<string, string>) =>
        Effect.map(
          ProviderBudgets.pipe(Effect.provide(ProviderBudgets.Default), Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))),
          (budgets) => budgets.windowsOf("telegram")
        )
      expect(yield* windows({})).toEqual([{ limit: 1, cost: 1, seconds: 1 }, { limit: 20, cost: 1, seconds: 60 }])
      const own = [{ limit: 10, cost: 1, seconds: 60 }]
      expect(yield* windows({ PROVIDER_BUDGETS: JSON.stringify({ telegram: own }) })).toEqual(own)
    }))

  it.effect("TELEGRAM_API_URL: Telegram's own unless set, read without a trailing slash", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        TelegramSettings.pipe(Effect.provide(TelegramSettings.Default), Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
      expect((yield* read({})).apiUrl).toBe("https://api.telegram.org")
      expect((yield* read({ TELEGRAM_API_URL: "http://127.0.0.1:8081/" })).apiUrl).toBe("http://127.0.0.1:8081")
      expect(yield* Effect.flip(read({ TELEGRAM_API_URL: "not a url" }))).toMatchObject({ _op: "InvalidData" })
    }))
})
