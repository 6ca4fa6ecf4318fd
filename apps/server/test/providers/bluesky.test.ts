import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { Outbound } from "../../src/Outbound/Outbound.js"
import { BlueskyCredentials } from "../../src/Providers/Credentials.js"
import { SocialProviders } from "../../src/Providers/Registry.js"
import { BlueskyNetwork } from "../support/BlueskyNetwork.js"
import { makeLocalServer } from "../support/LocalServer.js"
import { LocalProviders } from "../support/Providers.js"

const credentials = (serviceUrl: string, handle: string, appPassword: string) =>
  Schema.decodeUnknownSync(BlueskyCredentials)({ provider: "bluesky", handle, appPassword, serviceUrl })

const post = (text: string) => ({ postId: "post-1", text, idempotencyKey: crypto.randomUUID() })

/** Where `part` starts and ends in `text`, in UTF-8 bytes, as facets count. */
const byteSlice = (text: string, part: string) => {
  const start = Buffer.byteLength(text.slice(0, text.indexOf(part)))
  return { byteStart: start, byteEnd: start + Buffer.byteLength(part) }
}

// One network for the file (it starts in well under a second); rate limits on, for the 429 test.
layer(Layer.merge(BlueskyNetwork.layer({ rateLimits: true }), LocalProviders), { excludeTestServices: true })("Bluesky", (it) => {
  it.effect("verify logs in with the app password and reads the profile from the PDS", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const account = yield* Effect.promise(() => network.createAccount({ displayName: "Alice Test", avatar: true }))
      const profile = yield* (yield* SocialProviders).verify(credentials(network.serviceUrl, account.handle, account.appPassword))
      expect(profile).toMatchObject({
        handle: account.handle,
        displayName: "Alice Test",
        profileUrl: `https://bsky.app/profile/${account.handle}`,
        limits: { maxLength: 300, urlLength: null }
      })
      expect(profile.avatarUrl).toMatch(new RegExp(`^${network.serviceUrl}/xrpc/com\\.atproto\\.sync\\.getBlob\\?did=`))
      const avatar = yield* Effect.promise(() => fetch(profile.avatarUrl!))
      expect(avatar.status).toBe(200)
      expect(avatar.headers.get("content-type")).toBe("image/png")

      const bare = yield* Effect.promise(() => network.createAccount())
      expect(yield* (yield* SocialProviders).verify(credentials(network.serviceUrl, bare.handle, bare.appPassword))).toMatchObject({
        handle: bare.handle,
        displayName: null,
        avatarUrl: null
      })
    }))

  it.effect("publishes a post with link, hashtag and mention facets, read back from the PDS", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const friend = yield* Effect.promise(() => network.createAccount())
      const account = yield* Effect.promise(() => network.createAccount())
      const text = `Olá @${friend.handle}! Read https://example.com/docs?x=1 and #postline 🦋`
      const published = yield* (yield* SocialProviders).publish(
        { id: "account-1", credentials: credentials(network.serviceUrl, account.handle, account.appPassword) },
        post(text)
      )
      expect(published.externalId).toMatch(new RegExp(`^at://${account.did}/app\\.bsky\\.feed\\.post/[a-z2-7]{13}$`))
      expect(published.url).toBe(`https://bsky.app/profile/${account.handle}/post/${published.externalId.split("/").pop()}`)

      const record = yield* Effect.promise(() => network.getRecord(published.externalId))
      expect(record.text).toBe(text)
      expect(record.facets).toMatchObject([
        {
          index: byteSlice(text, `@${friend.handle}`),
          features: [{ $type: "app.bsky.richtext.facet#mention", did: friend.did }]
        },
        {
          index: byteSlice(text, "https://example.com/docs?x=1"),
          features: [{ $type: "app.bsky.richtext.facet#link", uri: "https://example.com/docs?x=1" }]
        },
        {
          index: byteSlice(text, "#postline"),
          features: [{ $type: "app.bsky.richtext.facet#tag", tag: "postline" }]
        }
      ])
      expect(record.facets).toHaveLength(3)
      expect(Date.parse(String(record.createdAt))).toBeGreaterThan(Date.now() - 60_000)
    }))

  it.effect("maps a wrong password to auth, an invalid record to invalid_content, and too many logins to rate_limited", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const providers = yield* SocialProviders
      const account = yield* Effect.promise(() => network.createAccount())
      const good = credentials(network.serviceUrl, account.handle, account.appPassword)

      const wrong = credentials(network.serviceUrl, account.handle, "aaaa-bbbb-cccc-dddd")
      expect(yield* providers.verify(wrong).pipe(Effect.flip)).toMatchObject({
        category: "auth",
        retryable: false,
        providerStatus: 401,
        providerMessage: expect.stringContaining("Invalid identifier or password")
      })

      // The PDS checks the record against the lexicon: at most 300 graphemes.
      const tooLong = yield* providers.publish({ id: "a", credentials: good }, post("é".repeat(301))).pipe(Effect.flip)
      expect(tooLong).toMatchObject({ category: "invalid_content", retryable: false, providerStatus: 400 })
      expect(tooLong.providerMessage).toContain("text")

      // createSession allows 30 attempts per account in 5 minutes (the PDS's own limit, turned on here).
      const attempts = yield* Effect.forEach(Array.from({ length: 32 }), () => providers.verify(wrong).pipe(Effect.flip), {
        concurrency: 8
      })
      const limited = attempts.find((error) => error.category === "rate_limited")
      expect(limited).toMatchObject({ retryable: true, providerStatus: 429 })
      expect(limited!.retryAfterSeconds).toBeGreaterThan(0)
      expect(limited!.retryAfterSeconds).toBeLessThanOrEqual(300)
    }))

  it.effect("a failing or unreachable service is transient; a local one is refused by the production guard", () =>
    Effect.gen(function*() {
      const providers = yield* SocialProviders
      const broken = yield* makeLocalServer((_, response) =>
        response.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ error: "NotEnoughResources", message: "Overloaded" }))
      )
      expect(yield* providers.verify(credentials(broken, "alice.test", "aaaa-bbbb-cccc-dddd")).pipe(Effect.flip)).toMatchObject({
        category: "transient",
        retryable: true,
        providerStatus: 503
      })
      expect(yield* providers.verify(credentials("http://127.0.0.1:1", "alice.test", "aaaa-bbbb-cccc-dddd")).pipe(Effect.flip))
        .toMatchObject({ category: "transient", retryable: true })

      const network = yield* BlueskyNetwork
      const guarded = yield* Layer.build(SocialProviders.Default.pipe(Layer.provide(Outbound.Default({ allowPrivate: false })))).pipe(
        Effect.map(Context.get(SocialProviders))
      )
      const local = network.serviceUrl.replace("http:", "https:")
      expect(yield* guarded.verify(credentials(local, "alice.test", "aaaa-bbbb-cccc-dddd")).pipe(Effect.flip)).toMatchObject({
        category: "unknown",
        retryable: false,
        providerMessage: expect.stringContaining("loopback")
      })
    }).pipe(Effect.scoped))

  it.effect("validate counts graphemes (300) and bytes (3000) as the lexicon does", () =>
    Effect.gen(function*() {
      const bluesky = (yield* SocialProviders).get("bluesky")
      expect(bluesky.validate("🦋".repeat(300))).toEqual([])
      expect(bluesky.validate("🦋".repeat(301))).toMatchObject([{ code: "too_long", length: 301, maxLength: 300 }])
      expect(bluesky.validate("👨‍👩‍👧‍👦".repeat(200))).toMatchObject([{ code: "too_long", length: 5000, maxLength: 3000 }])
      expect(bluesky.validate(" \n")).toMatchObject([{ code: "empty" }])
      expect(bluesky.defaultLimits).toEqual({ maxLength: 300, urlLength: null })
    }))
})

describe("Bluesky credentials", () => {
  it("take an app password only, and never quote what they refuse", () => {
    const decode = Schema.decodeUnknownEither(BlueskyCredentials)
    const valid = decode({ provider: "bluesky", handle: "alice.bsky.social", appPassword: "abcd-efgh-ijkl-mnop" })
    expect(valid._tag === "Right" && valid.right).toMatchObject({ handle: "alice.bsky.social" })
    expect(valid._tag === "Right" && Redacted.value(valid.right.appPassword)).toBe("abcd-efgh-ijkl-mnop")
    const refused = decode({ provider: "bluesky", handle: "alice.bsky.social", appPassword: "my main password!" })
    expect(refused._tag).toBe("Left")
    expect(String(refused._tag === "Left" ? refused.left : "")).not.toContain("main password")
    expect(String(refused._tag === "Left" ? refused.left : "")).toContain("app password")
  })
})
