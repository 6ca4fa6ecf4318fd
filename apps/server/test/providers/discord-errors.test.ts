import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import { DiscordSettings } from "../../src/Providers/DiscordSettings.js"
import { discordAccount, discordAgainst, discordPost as post } from "../support/DiscordAdapter.js"
import { makeDiscordFake } from "../support/DiscordFake.js"

const setup = Effect.gen(function*() {
  const fake = yield* makeDiscordFake
  const discord = yield* discordAgainst(fake)
  const account = discordAccount(fake)
  // The webhook's server is read once; the canned answers below then meet the message itself.
  yield* discord.verify(account.credentials)
  return { fake, discord, account }
})

const settingsWith = (values: ReadonlyArray<[string, string]>) =>
  Effect.provide(DiscordSettings, DiscordSettings.Default.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(values))))))

describe("Discord's error answers as provider errors", () => {
  it.scopedLive("429 is rate_limited after Discord's retry_after (a float, rounded up), whatever its scope", () =>
    Effect.gen(function*() {
      const { account, discord, fake } = yield* setup
      fake.rateLimitNext(1.5)
      const shared = yield* discord.publish(account, post("Soon")).pipe(Effect.flip)
      expect(shared).toMatchObject({
        category: "rate_limited",
        retryable: true,
        retryAfterSeconds: 2,
        providerStatus: 429,
        providerMessage: "The resource is being rate limited."
      })
      fake.rateLimitNext(64.57, "global")
      expect(yield* discord.publish(account, post("Soon")).pipe(Effect.flip)).toMatchObject({ category: "rate_limited", retryAfterSeconds: 65 })
      // Without a body's retry_after, the Retry-After header says it.
      fake.answerNext({ status: 429, headers: { "retry-after": "7" }, body: { message: "You are being rate limited.", global: false } })
      expect(yield* discord.publish(account, post("Soon")).pipe(Effect.flip)).toMatchObject({ category: "rate_limited", retryAfterSeconds: 7 })
      expect(fake.messages).toHaveLength(0)
    }))

  it.scopedLive("5xx is transient; a Discord that cannot be reached is transient too", () =>
    Effect.gen(function*() {
      const { account, discord, fake } = yield* setup
      for (const status of [500, 502, 503]) {
        fake.answerNext({ status, body: { message: "Service Unavailable", code: 0 } })
        expect(yield* discord.publish(account, post("Later")).pipe(Effect.flip)).toMatchObject({ category: "transient", retryable: true, providerStatus: status })
      }
      const nowhere = yield* discordAgainst({ ...fake, apiUrl: "http://127.0.0.1:9/api" })
      expect(yield* nowhere.verify(account.credentials).pipe(Effect.flip)).toMatchObject({ category: "transient", retryable: true })
    }))

  it.scopedLive("400 and 413 are invalid_content, with what Discord said was wrong where", () =>
    Effect.gen(function*() {
      const { account, discord, fake } = yield* setup
      fake.answerNext({
        status: 400,
        body: { code: 50035, message: "Invalid Form Body", errors: { attachments: { 0: { description: { _errors: [{ code: "BASE_TYPE_MAX_LENGTH", message: "Must be 1024 or fewer in length." }] } } } } }
      })
      expect(yield* discord.publish(account, post("Refused")).pipe(Effect.flip)).toMatchObject({
        category: "invalid_content",
        retryable: false,
        providerMessage: "Invalid Form Body: attachments.0.description: Must be 1024 or fewer in length."
      })
      fake.answerNext({ status: 400, body: { message: "Cannot send an empty message", code: 50006 } })
      expect(yield* discord.publish(account, post("Refused")).pipe(Effect.flip)).toMatchObject({ category: "invalid_content", providerMessage: "Cannot send an empty message" })
      fake.answerNext({ status: 413, body: { message: "Request entity too large", code: 40005 } })
      expect(yield* discord.publish(account, post("Refused")).pipe(Effect.flip)).toMatchObject({ category: "invalid_content", providerStatus: 413 })
    }))

  it.scopedLive("401 and 403, and 404 Unknown Webhook, are auth: the account is to be connected again", () =>
    Effect.gen(function*() {
      const { account, discord, fake } = yield* setup
      fake.answerNext({ status: 403, body: { message: "Missing Permissions", code: 50013 } })
      expect(yield* discord.publish(account, post("No")).pipe(Effect.flip)).toMatchObject({ category: "auth", providerStatus: 403, providerMessage: "Missing Permissions" })
      fake.answerNext({ status: 401, body: { message: "Invalid Webhook Token", code: 50027 } })
      expect(yield* discord.publish(account, post("No")).pipe(Effect.flip)).toMatchObject({ category: "auth", providerStatus: 401 })
      fake.deleteWebhook(fake.webhook)
      const deleted = yield* discord.publish(account, post("No")).pipe(Effect.flip)
      expect(deleted).toMatchObject({ category: "auth", retryable: false, providerStatus: 404 })
      expect(deleted.providerMessage).toContain("it was deleted, or the URL is wrong")
      // Another 404 (no such route) is not taken for a deleted webhook.
      fake.answerNext({ status: 404, body: { message: "404: Not Found", code: 0 } })
      expect(yield* discord.verify(account.credentials).pipe(Effect.flip)).toMatchObject({ category: "unknown", providerStatus: 404 })
      expect(JSON.stringify(fake.requests.map(({ path }) => path))).toContain(fake.webhook.token)
      expect(fake.messages).toHaveLength(0)
    }))

  it.scopedLive("an answer that is not Discord's message is unknown, and names the call, never its URL (the token)", () =>
    Effect.gen(function*() {
      const { account, discord, fake } = yield* setup
      fake.answerNext({ status: 200, body: { unexpected: true } })
      const odd = yield* discord.publish(account, post("Odd")).pipe(Effect.flip)
      expect(odd).toMatchObject({ category: "unknown", retryable: false, providerMessage: "Unexpected answer to Execute Webhook: {\"unexpected\":true}" })
      expect(odd.message).not.toContain(fake.webhook.token)
      expect(Redacted.value(account.credentials.webhookUrl)).toContain(fake.webhook.token)
    }))
})

describe("DISCORD_API_URL", () => {
  it.effect("is Discord's own API unless set; a set one loses its trailing slash; one that is no URL stops the start", () =>
    Effect.gen(function*() {
      expect((yield* settingsWith([])).apiUrl).toBe("https://discord.com/api")
      expect((yield* settingsWith([["DISCORD_API_URL", "http://127.0.0.1:4000/api/"]])).apiUrl).toBe("http://127.0.0.1:4000/api")
      const refused = yield* settingsWith([["DISCORD_API_URL", "not a url"]]).pipe(Effect.flip)
      expect(String(refused)).toContain("DISCORD_API_URL")
    }))
})
