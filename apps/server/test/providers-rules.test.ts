import { expect, layer } from "@effect/vitest"
import { maxThreadParts, ProviderRulesList } from "@postline/domain"
import { ConfigProvider, Effect, Either, Layer, Schema } from "effect"
import { SocialProviders } from "../src/Providers/Registry.js"
import type { MediaFacts } from "../src/Providers/SocialProvider.js"
import { document, isValid } from "./support/OpenApiDocument.js"
import { LocalProviders } from "./support/Providers.js"
import { publishingTeam } from "./support/Publishing.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

/**
 * GET /v1/providers over the real HTTP stack: who may read it, its shape as the document and the domain say, and
 * its values as the adapters enforce them (each limit read from the answer, then tried at and past its bound),
 * with this server's CREDIT_COSTS and PROVIDER_BUDGETS.
 */

const creditCosts = { bluesky: 2, webhook: 3 }
const mastodonBudget = [{ limit: 100, cost: 2, seconds: 600 }]

const Settings = Layer.setConfigProvider(
  ConfigProvider.fromMap(new Map([
    ["CREDIT_COSTS", JSON.stringify(creditCosts)],
    ["PROVIDER_BUDGETS", JSON.stringify({ mastodon: mastodonBudget })]
  ])).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
)

const responseSchema = document.paths["/v1/providers"].get.responses["200"].content["application/json"].schema
const decodeStrictly = Schema.decodeUnknownEither(ProviderRulesList, { onExcessProperty: "error" })

/** The answer as a user reads it, checked against the document and the domain. */
const readRules = (token: string) =>
  Effect.gen(function*() {
    const answer = yield* raw({ method: "GET", path: "/v1/providers", token })
    expect(answer.status, JSON.stringify(answer.body)).toBe(200)
    expect(isValid(responseSchema, answer.body), JSON.stringify(answer.body)).toBe(true)
    expect(Either.isRight(decodeStrictly(answer.body))).toBe(true)
    const { data } = answer.body as ProviderRulesList
    expect(data.map((rules) => rules.provider)).toEqual(["bluesky", "mastodon", "x", "telegram", "discord", "webhook"])
    const of = (provider: ProviderRulesList["data"][number]["provider"]) => data.find((rules) => rules.provider === provider)!
    return { answer: answer.body, bluesky: of("bluesky"), mastodon: of("mastodon"), x: of("x"), telegram: of("telegram"), discord: of("discord"), webhook: of("webhook") }
  })

const image = (contentType = "image/jpeg", size = 1000, width = 100, height = 100, altText: string | null = null): MediaFacts => ({
  kind: "image",
  contentType,
  size,
  width,
  height,
  altText
})
const video = (size = 1000, width = 100, height = 100): MediaFacts => ({ kind: "video", contentType: "video/mp4", size, width, height, altText: null })
const images = (count: number) => Array.from({ length: count }, () => image())

layer(Layer.merge(TestServer.pipe(Layer.provide(Settings)), LocalProviders), { excludeTestServices: true })("GET /v1/providers", (it) => {
  it.effect("401 without credentials or with a token the server does not know", () =>
    Effect.gen(function*() {
      for (const token of [undefined, "plt_unknown"]) {
        const refused = yield* raw({ method: "GET", path: "/v1/providers", ...(token ? { token } : {}) })
        expect(refused.status).toBe(401)
        expect(refused.body).toEqual({ _tag: "Unauthorized", message: expect.any(String) })
      }
    }))

  it.effect("a user and an organization's API key read the same answer, valid for the document's schema and the domain's", () =>
    Effect.gen(function*() {
      const user = yield* signUp()
      const organization = yield* user.client.organizations.createOrganization({ payload: { name: "Acme" } })
      const { key } = yield* user.client.apiKeys.createApiKey({ path: { organizationId: organization.id }, payload: { name: "Agent" } })
      const asUser = yield* readRules(user.token)
      expect((yield* readRules(key)).answer).toEqual(asUser.answer)
      // The typed client reads it too.
      expect(yield* user.client.providers.listProviders()).toEqual(asUser.answer)
      // What the document calls invalid is not taken for valid: the check can fail.
      expect(isValid(responseSchema, { data: [{ ...asUser.bluesky, text: { ...asUser.bluesky.text, counting: "bytes" } }] })).toBe(false)
      expect(isValid(responseSchema, { data: [{ ...asUser.bluesky, extra: true }] })).toBe(false)
    }))

  it.effect("Bluesky: 300 graphemes and 3000 bytes, 4 images of the types it takes, no video, as the adapter refuses past them", () =>
    Effect.gen(function*() {
      const { bluesky: rules } = yield* readRules((yield* signUp()).token)
      expect(rules).toMatchObject({
        displayName: "Bluesky",
        connect: { method: "app_password" },
        text: { maxLength: 300, counting: "graphemes", urlLength: null, maxBytes: 3000 },
        media: { maxItems: 4, contentTypes: ["image/jpeg", "image/png", "image/webp", "image/gif"], maxImageBytes: 2_000_000, perAccount: false },
        features: { threads: true, maxThreadParts, firstComment: true, delete: true }
      })
      const bluesky = (yield* SocialProviders).get("bluesky")
      const maxLength = rules.text.maxLength!
      expect(bluesky.validate("🦋".repeat(maxLength))).toEqual([])
      expect(bluesky.validate("🦋".repeat(maxLength + 1))).toMatchObject([{ code: "too_long", maxLength }])
      // A family emoji is one grapheme of 25 bytes.
      const family = "👨‍👩‍👧‍👦"
      expect(bluesky.validate(family.repeat(rules.text.maxBytes! / 25))).toEqual([])
      expect(bluesky.validate(family.repeat(rules.text.maxBytes! / 25 + 1))).toMatchObject([{ code: "too_long", maxLength: rules.text.maxBytes }])
      const maxItems = rules.media.maxItems!
      expect(bluesky.validateMedia(images(maxItems))).toEqual([])
      expect(bluesky.validateMedia(images(maxItems + 1))).toMatchObject([{ code: "media" }])
      for (const type of rules.media.contentTypes) expect(bluesky.validateMedia([image(type)]), type).toEqual([])
      expect(bluesky.validateMedia([image("image/heic")])).toHaveLength(1)
      expect(bluesky.validateMedia([video()])).toHaveLength(1)
      expect(bluesky.defaultLimits).toEqual({ maxLength, urlLength: null })
    }))

  it.effect("Mastodon: 500 with every URL as 23, and its default media limits, as the adapter refuses past them", () =>
    Effect.gen(function*() {
      const { mastodon: rules } = yield* readRules((yield* signUp()).token)
      expect(rules).toMatchObject({
        displayName: "Mastodon",
        connect: { method: "access_token" },
        text: { maxLength: 500, counting: "graphemes", urlLength: 23, maxBytes: null },
        media: {
          maxItems: 4,
          contentTypes: ["image/jpeg", "image/png", "image/webp", "image/gif", "video/mp4"],
          maxImageBytes: 16 * 1024 * 1024,
          maxVideoBytes: 99 * 1024 * 1024,
          maxImagePixels: 7680 * 4320,
          maxVideoPixels: 3840 * 2160,
          maxAltTextLength: 1500,
          maxVideoSeconds: null,
          perAccount: true
        },
        features: { threads: true, maxThreadParts, firstComment: true, delete: true }
      })
      const mastodon = (yield* SocialProviders).get("mastodon")
      const { maxLength, urlLength } = rules.text as { maxLength: number; urlLength: number }
      const url = `https://example.com/${"a".repeat(200)}`
      expect(mastodon.validate(`${"x".repeat(maxLength - urlLength - 1)} ${url}`)).toEqual([])
      expect(mastodon.validate(`${"x".repeat(maxLength - urlLength)} ${url}`)).toMatchObject([{ code: "too_long", length: maxLength + 1, maxLength }])
      const media = rules.media as { [K in keyof typeof rules.media]: NonNullable<typeof rules.media[K]> }
      const refusesPast = (atTheBound: MediaFacts, past: MediaFacts) => {
        expect(mastodon.validateMedia([atTheBound]), JSON.stringify(atTheBound)).toEqual([])
        expect(mastodon.validateMedia([past]), JSON.stringify(past)).toMatchObject([{ code: "media" }])
      }
      expect(mastodon.validateMedia(images(media.maxItems))).toEqual([])
      expect(mastodon.validateMedia(images(media.maxItems + 1))).toMatchObject([{ code: "media" }])
      refusesPast(image("image/jpeg", media.maxImageBytes), image("image/jpeg", media.maxImageBytes + 1))
      refusesPast(image("image/jpeg", 1000, 7680, 4320), image("image/jpeg", 1000, 7681, 4320))
      expect(7680 * 4320).toBe(media.maxImagePixels)
      refusesPast(video(media.maxVideoBytes), video(media.maxVideoBytes + 1))
      refusesPast(video(1000, 3840, 2160), video(1000, 3841, 2160))
      expect(3840 * 2160).toBe(media.maxVideoPixels)
      refusesPast(image("image/jpeg", 1000, 100, 100, "a".repeat(media.maxAltTextLength)), image("image/jpeg", 1000, 100, 100, "a".repeat(media.maxAltTextLength + 1)))
      for (const type of media.contentTypes) expect(mastodon.validateMedia([type === "video/mp4" ? video() : image(type)]), type).toEqual([])
      expect(mastodon.validateMedia([image("image/heic")])).toHaveLength(1)
    }))

  it.effect("X: 280 weighted (CJK and emoji two, every URL 23), 4 images or one video, signed in only, as the adapter refuses past them", () =>
    Effect.gen(function*() {
      const { x: rules } = yield* readRules((yield* signUp()).token)
      expect(rules).toMatchObject({
        displayName: "X",
        connect: { method: "oauth", oauth: { configured: false, missingSettings: ["X_CLIENT_ID", "X_CLIENT_SECRET"], refreshes: true } },
        text: { maxLength: 280, counting: "weighted", urlLength: 23, maxBytes: null },
        media: { maxItems: 4, maxImageBytes: 5 * 1024 * 1024, maxVideoBytes: 512 * 1024 * 1024, maxAltTextLength: 1000, perAccount: false },
        features: { threads: true, maxThreadParts, firstComment: true, delete: true }
      })
      const x = (yield* SocialProviders).get("x")
      const url = `https://example.com/${"a".repeat(200)}`
      expect(x.validate(`${"x".repeat(280 - 23 - 1)} ${url}`)).toEqual([])
      expect(x.validate(`${"x".repeat(280 - 23)} ${url}`)).toMatchObject([{ code: "too_long", length: 281, maxLength: 280 }])
      expect(x.validate("字".repeat(140))).toEqual([])
      expect(x.validate("字".repeat(141))).toMatchObject([{ code: "too_long", length: 282 }])
      const media = rules.media as { maxImageBytes: number; maxVideoBytes: number; maxAltTextLength: number }
      expect(x.validateMedia(images(4))).toEqual([])
      expect(x.validateMedia(images(5))).toMatchObject([{ code: "media" }])
      expect(x.validateMedia([video(), image()])).toMatchObject([{ code: "media" }])
      expect(x.validateMedia([image("image/jpeg", media.maxImageBytes)])).toEqual([])
      expect(x.validateMedia([image("image/jpeg", media.maxImageBytes + 1)])).toMatchObject([{ code: "media" }])
      expect(x.validateMedia([video(media.maxVideoBytes)])).toEqual([])
      expect(x.validateMedia([video(media.maxVideoBytes + 1)])).toMatchObject([{ code: "media" }])
      expect(x.validateMedia([image("image/jpeg", 1000, 100, 100, "a".repeat(media.maxAltTextLength))])).toEqual([])
      expect(x.validateMedia([image("image/jpeg", 1000, 100, 100, "a".repeat(media.maxAltTextLength + 1))])).toMatchObject([{ code: "media" }])
    }))

  it.effect("Telegram: 4096 UTF-16 code units, 10 photos (10 MB) and videos (50 MB), a bot's token, no analytics, as the adapter refuses past them", () =>
    Effect.gen(function*() {
      const { telegram: rules } = yield* readRules((yield* signUp()).token)
      expect(rules).toMatchObject({
        displayName: "Telegram",
        connect: { method: "bot_token", oauth: null },
        text: { maxLength: 4096, counting: "utf16", urlLength: null, maxBytes: null },
        media: {
          maxItems: 10,
          contentTypes: ["image/jpeg", "image/png", "image/webp", "video/mp4"],
          maxImageBytes: 10 * 1024 * 1024,
          maxVideoBytes: 50 * 1024 * 1024,
          maxAltTextLength: null,
          perAccount: false
        },
        features: { threads: true, maxThreadParts, firstComment: true, delete: true, analytics: false }
      })
      const telegram = (yield* SocialProviders).get("telegram")
      const maxLength = rules.text.maxLength!
      // An emoji beyond the Basic Multilingual Plane is two UTF-16 code units.
      expect(telegram.validate("🦋".repeat(maxLength / 2))).toEqual([])
      expect(telegram.validate(`${"🦋".repeat(maxLength / 2)}a`)).toMatchObject([{ code: "too_long", length: maxLength + 1, maxLength }])
      const media = rules.media as { maxItems: number; maxImageBytes: number; maxVideoBytes: number; contentTypes: ReadonlyArray<string> }
      expect(telegram.validateMedia(images(media.maxItems))).toEqual([])
      expect(telegram.validateMedia(images(media.maxItems + 1))).toMatchObject([{ code: "media" }])
      expect(telegram.validateMedia([image("image/jpeg", media.maxImageBytes), video(media.maxVideoBytes)])).toEqual([])
      expect(telegram.validateMedia([image("image/jpeg", media.maxImageBytes + 1)])).toMatchObject([{ code: "media" }])
      expect(telegram.validateMedia([video(media.maxVideoBytes + 1)])).toMatchObject([{ code: "media" }])
      for (const type of media.contentTypes) expect(telegram.validateMedia([type === "video/mp4" ? video() : image(type)]), type).toEqual([])
      expect(telegram.validateMedia([image("image/gif")])).toHaveLength(1)
      expect(telegram.analytics).toBeNull()
    }))

  it.effect("features.analytics says which providers' adapters read figures: Bluesky, Mastodon and X", () =>
    Effect.gen(function*() {
      const { answer } = yield* readRules((yield* signUp()).token)
      const providers = yield* SocialProviders
      const { data } = answer as ProviderRulesList
      expect(data.filter((rules) => rules.features.analytics).map((rules) => rules.provider)).toEqual(["bluesky", "mastodon", "x"])
      for (const rules of data) expect(rules.features.analytics, rules.provider).toBe(providers.get(rules.provider).analytics !== null)
    }))

  it.effect("Discord: 2000 code points, 10 files of 10 MiB, alt text 1024, a channel's webhook, as the adapter refuses past them", () =>
    Effect.gen(function*() {
      const { discord: rules } = yield* readRules((yield* signUp()).token)
      expect(rules).toMatchObject({
        displayName: "Discord",
        connect: { method: "channel_webhook", oauth: null },
        text: { maxLength: 2000, counting: "code_points", urlLength: null, maxBytes: null },
        media: { maxItems: 10, maxImageBytes: 10 * 1024 * 1024, maxVideoBytes: 10 * 1024 * 1024, maxAltTextLength: 1024, perAccount: false },
        features: { threads: true, maxThreadParts, firstComment: true, delete: true, analytics: false }
      })
      expect(rules.connect.description).toContain("A webhook cannot reply: a thread's later parts and a first comment are the messages that follow")
      const discord = (yield* SocialProviders).get("discord")
      const maxLength = rules.text.maxLength!
      // An emoji with a skin tone is two code points.
      expect(discord.validate("👍🏽".repeat(maxLength / 2))).toEqual([])
      expect(discord.validate(`${"👍🏽".repeat(maxLength / 2)}a`)).toMatchObject([{ code: "too_long", length: maxLength + 1, maxLength }])
      const media = rules.media as { maxItems: number; maxImageBytes: number; maxVideoBytes: number; maxAltTextLength: number }
      expect(discord.validateMedia(images(media.maxItems))).toEqual([])
      expect(discord.validateMedia(images(media.maxItems + 1))).toMatchObject([{ code: "media" }])
      expect(discord.validateMedia([image("image/jpeg", media.maxImageBytes), video(media.maxVideoBytes)])).toEqual([])
      expect(discord.validateMedia([image("image/jpeg", media.maxImageBytes + 1)])).toMatchObject([{ code: "media" }])
      expect(discord.validateMedia([video(media.maxVideoBytes + 1)])).toMatchObject([{ code: "media" }])
      expect(discord.validateMedia([image("image/jpeg", 1000, 100, 100, "a".repeat(media.maxAltTextLength))])).toEqual([])
      expect(discord.validateMedia([image("image/jpeg", 1000, 100, 100, "a".repeat(media.maxAltTextLength + 1))])).toMatchObject([{ code: "media" }])
      expect(discord.analytics).toBeNull()
    }))

  it.effect("webhook: no limit on text or media, which it passes on as links", () =>
    Effect.gen(function*() {
      const { webhook: rules } = yield* readRules((yield* signUp()).token)
      expect(rules).toMatchObject({
        displayName: "Webhook",
        connect: { method: "signed_webhook" },
        text: { maxLength: null, counting: "graphemes", urlLength: null, maxBytes: null },
        media: { maxItems: null, maxImageBytes: null, maxVideoBytes: null, maxAltTextLength: null, perAccount: false },
        features: { threads: true, maxThreadParts, firstComment: true, delete: true }
      })
      const webhook = (yield* SocialProviders).get("webhook")
      expect(webhook.validate("x".repeat(10_000))).toEqual([])
      expect(webhook.validateMedia([...images(10), video(10 ** 9, 10_000, 10_000)])).toEqual([])
    }))

  it.effect("answers this server's CREDIT_COSTS per publish and PROVIDER_BUDGETS per account, defaults for the rest, as publishing charges", () =>
    Effect.gen(function*() {
      const team = yield* publishingTeam()
      const { bluesky, mastodon, webhook } = yield* readRules(team.admin.token)
      expect([bluesky.credits, mastodon.credits, webhook.credits]).toEqual([{ perPublish: 2 }, { perPublish: 1 }, { perPublish: 3 }])
      expect(mastodon.budgets).toEqual(mastodonBudget)
      expect(bluesky.budgets).toEqual([
        { limit: 5_000, cost: 3, seconds: 3_600 },
        { limit: 35_000, cost: 3, seconds: 86_400 },
        { limit: 30, cost: 1, seconds: 300 },
        { limit: 300, cost: 1, seconds: 86_400 }
      ])
      expect(webhook.budgets).toEqual([])
      // The estimate of a publish to a webhook account charges what the answer says.
      const hook = yield* team.connect({ provider: "webhook", url: "https://127.0.0.1:9/hook" })
      const draft = yield* team.call("POST", "/posts", { content: "Hello" })
      const estimate = yield* team.call("POST", `/posts/${draft.body.id}/estimate`, { socialAccountIds: [hook.id] })
      expect(estimate.status, JSON.stringify(estimate.body)).toBe(200)
      expect(estimate.body.perAccount).toMatchObject([{ socialAccountId: hook.id, credits: webhook.credits.perPublish }])
    }))
})
