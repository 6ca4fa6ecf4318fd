import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { createRequire } from "node:module"
import { Outbound } from "../../src/Outbound/Outbound.js"
import { BlueskyCredentials } from "../../src/Providers/Credentials.js"
import { SocialProviders } from "../../src/Providers/Registry.js"
import { BlueskyNetwork } from "../support/BlueskyNetwork.js"
import { makeLocalServer } from "../support/LocalServer.js"
import { LocalProviders } from "../support/Providers.js"

const credentials = (serviceUrl: string, handle: string, appPassword: string) =>
  Schema.decodeUnknownSync(BlueskyCredentials)({ provider: "bluesky", handle, appPassword, serviceUrl })

const post = (text: string) => ({ postId: "post-1", text, idempotencyKey: crypto.randomUUID() })

// The TID rules and codec of the atproto libraries themselves, as @atproto/api has them.
const atprotoRequire = createRequire(createRequire(import.meta.url).resolve("@atproto/api"))
const { isValidTid } = atprotoRequire("@atproto/syntax") as { isValidTid: (key: string) => boolean }
const { TID } = atprotoRequire("@atproto/common-web") as {
  TID: { fromStr: (key: string) => { timestamp: () => number } }
}

/** The keys of an account's posts, as its PDS lists them. */
const postKeys = (serviceUrl: string, did: string) =>
  Effect.promise(async () => {
    const query = new URLSearchParams({ repo: did, collection: "app.bsky.feed.post", limit: "100" })
    const response = await fetch(`${serviceUrl}/xrpc/com.atproto.repo.listRecords?${query}`)
    const { records } = (await response.json()) as { records: ReadonlyArray<{ uri: string }> }
    return records.map((record) => record.uri.split("/").pop()!).sort()
  })

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

  it.effect("a repeat with the same key, in turn or at once, finds the first post: one record, one answer", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const providers = yield* SocialProviders
      const account = yield* Effect.promise(() => network.createAccount())
      const target = { id: "account-1", credentials: credentials(network.serviceUrl, account.handle, account.appPassword) }
      const request = { postId: "post-1", text: "Once only 🦋", idempotencyKey: "post-1:account-1" }

      // Two at once race for the key; the one that loses finds the winner's post.
      const [first, together] = yield* Effect.all([providers.publish(target, request), providers.publish(target, request)], {
        concurrency: "unbounded"
      })
      const again = yield* providers.publish(target, request)
      expect(together).toEqual(first)
      expect(again).toEqual(first)

      const key = first.externalId.split("/").pop()!
      expect(yield* postKeys(network.serviceUrl, account.did)).toEqual([key])
      expect((yield* Effect.promise(() => network.getRecord(first.externalId))).text).toBe("Once only 🦋")

      // A TID by the library's own rules, top bit 0, its time in the past; the same for the same key anywhere.
      expect(isValidTid(key)).toBe(true)
      expect(key[0]).toMatch(/[234567ab]/)
      expect(TID.fromStr(key).timestamp()).toBeLessThan(Date.now() * 1000)
      expect(TID.fromStr(key).timestamp()).toBeGreaterThan(Date.UTC(2023, 0, 1) * 1000)
      const elsewhere = yield* Effect.promise(() => network.createAccount())
      const copied = yield* providers.publish(
        { id: "account-2", credentials: credentials(network.serviceUrl, elsewhere.handle, elsewhere.appPassword) },
        request
      )
      expect(copied.externalId).toBe(`at://${elsewhere.did}/app.bsky.feed.post/${key}`)

      // Another key is another post, even with the same text.
      const other = yield* providers.publish(target, { ...request, postId: "post-2", idempotencyKey: "post-2:account-1" })
      expect(other.externalId).not.toBe(first.externalId)
      expect(isValidTid(other.externalId.split("/").pop()!)).toBe(true)
      expect(yield* postKeys(network.serviceUrl, account.did)).toEqual([key, other.externalId.split("/").pop()].sort())
    }))

  it.effect("a record of another text at the key is a collision: unknown, and nothing is overwritten", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const providers = yield* SocialProviders
      const account = yield* Effect.promise(() => network.createAccount())
      const target = { id: "account-1", credentials: credentials(network.serviceUrl, account.handle, account.appPassword) }
      const first = yield* providers.publish(target, { postId: "post-1", text: "The first text", idempotencyKey: "k" })

      const clash = yield* providers.publish(target, { postId: "post-1", text: "Another text", idempotencyKey: "k" }).pipe(
        Effect.flip
      )
      expect(clash).toMatchObject({ provider: "bluesky", category: "unknown", retryable: false })
      expect(clash.providerMessage).toContain(first.externalId)
      expect(clash.providerMessage).toContain("another text")
      expect(yield* postKeys(network.serviceUrl, account.did)).toEqual([first.externalId.split("/").pop()])
      expect((yield* Effect.promise(() => network.getRecord(first.externalId))).text).toBe("The first text")
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
