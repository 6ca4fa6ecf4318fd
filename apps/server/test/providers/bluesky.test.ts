import { AtpAgent } from "@atproto/api"
import { describe, expect, it, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { createHash } from "node:crypto"
import { createRequire } from "node:module"
import sharp from "sharp"
import { Outbound } from "../../src/Outbound/Outbound.js"
import { BlueskyAppPassword } from "../../src/Providers/Credentials.js"
import { SocialProviders } from "../../src/Providers/Registry.js"
import { XSettings } from "../../src/Providers/XSettings.js"
import { BlueskyOAuthSettings } from "../../src/Providers/BlueskyOAuthClient.js"
import type { PublishMedia } from "../../src/Providers/SocialProvider.js"
import { BlueskyNetwork } from "../support/BlueskyNetwork.js"
import { makeLocalServer } from "../support/LocalServer.js"
import { imageFacts, makeMediaFixtures } from "../support/MediaFixtures.js"
import { LocalProviders } from "../support/Providers.js"

const credentials = (serviceUrl: string, handle: string, appPassword: string) =>
  Schema.decodeUnknownSync(BlueskyAppPassword)({ provider: "bluesky", handle, appPassword, serviceUrl })

const post = (text: string, media: ReadonlyArray<PublishMedia> = []) => ({
  postId: "post-1",
  text,
  idempotencyKey: crypto.randomUUID(),
  media
})

interface EmbeddedImage {
  readonly image: { readonly ref: unknown; readonly mimeType: string; readonly size: number }
  readonly alt: string
  readonly aspectRatio?: { readonly width: number; readonly height: number }
}

/** The images of a post's app.bsky.embed.images embed, as the PDS stored it. */
const embeddedImages = (record: Record<string, unknown>) => {
  const embed = record.embed as { readonly $type: string; readonly images: ReadonlyArray<EmbeddedImage> }
  expect(embed.$type).toBe("app.bsky.embed.images")
  return embed.images
}

/** A blob as anyone reads it from the account's PDS. */
const getBlob = (serviceUrl: string, did: string, ref: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(`${serviceUrl}/xrpc/com.atproto.sync.getBlob?${new URLSearchParams({ did, cid: String(ref) })}`)
    expect(response.status).toBe(200)
    return Buffer.from(await response.arrayBuffer())
  })

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** The stored file's bytes, as the provider would read them. */
const readStored = (medium: PublishMedia) =>
  Effect.scoped(Effect.flatMap(medium.open, (blob) => Effect.promise(async () => Buffer.from(await blob.arrayBuffer()))))

const image = imageFacts

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

  it.effect("publishes four images with their alt texts and aspect ratios; the PDS serves each blob as it was stored", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const account = yield* Effect.promise(() => network.createAccount())
      const fixtures = yield* makeMediaFixtures
      const media = [
        yield* fixtures.image({ width: 640, height: 480, format: "jpeg", altText: "A lighthouse at dusk" }),
        yield* fixtures.image({ width: 300, height: 500, format: "png", altText: "Ünïcödé alt 🦋" }),
        yield* fixtures.image({ width: 800, height: 400, format: "webp", altText: null }),
        yield* fixtures.image({ width: 120, height: 90, format: "gif", altText: "A tiny GIF" })
      ]
      const providers = yield* SocialProviders
      expect(providers.get("bluesky").validateMedia(media)).toEqual([])
      const published = yield* providers.publish(
        { id: "account-1", credentials: credentials(network.serviceUrl, account.handle, account.appPassword) },
        post("Four pictures 📷", media)
      )

      const record = yield* Effect.promise(() => network.getRecord(published.externalId))
      expect(record.text).toBe("Four pictures 📷")
      const images = embeddedImages(record)
      expect(images.map(({ alt, aspectRatio }) => ({ alt, aspectRatio }))).toEqual([
        { alt: "A lighthouse at dusk", aspectRatio: { width: 640, height: 480 } },
        { alt: "Ünïcödé alt 🦋", aspectRatio: { width: 300, height: 500 } },
        { alt: "", aspectRatio: { width: 800, height: 400 } },
        { alt: "A tiny GIF", aspectRatio: { width: 120, height: 90 } }
      ])
      for (const [index, embedded] of images.entries()) {
        const blob = yield* getBlob(network.serviceUrl, account.did, embedded.image.ref)
        expect(sha256(blob)).toBe(media[index].sha256)
        expect(embedded.image).toMatchObject({ mimeType: media[index].contentType, size: media[index].size })
      }
    }).pipe(Effect.scoped))

  it.effect("images over 2,000,000 bytes, which the PDS refuses as they are, are sent smaller with their aspect ratio", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const account = yield* Effect.promise(() => network.createAccount())
      const fixtures = yield* makeMediaFixtures
      // Random pixels, which no format compresses. The first is under the PDS's upload limit (5 MiB here), the
      // second over it too, and over the 2000 pixels Bluesky shows.
      const noisy = yield* fixtures.image({ width: 1100, height: 1000, format: "png", noise: true, altText: "Static" })
      const huge = yield* fixtures.image({ width: 2400, height: 1600, format: "png", noise: true })
      expect(noisy.size).toBeGreaterThan(3_000_000)
      expect(huge.size).toBeGreaterThan(10_000_000)

      // The lexicon's limit is the PDS's own: a post with the first file as it is, is refused.
      const agent = new AtpAgent({ service: network.serviceUrl })
      yield* Effect.promise(() => agent.login({ identifier: account.handle, password: account.appPassword }))
      const original = yield* readStored(noisy)
      const refused = yield* Effect.promise(async () => {
        const { data } = await agent.uploadBlob(original, { encoding: "image/png" })
        return agent.post({ text: "As it is", embed: { $type: "app.bsky.embed.images", images: [{ image: data.blob, alt: "" }] } })
          .then(() => "accepted", (error: Error) => error.message)
      })
      expect(refused).toContain(`blob too big (maximum 2000000, got ${noisy.size})`)

      const published = yield* (yield* SocialProviders).publish(
        { id: "account-1", credentials: credentials(network.serviceUrl, account.handle, account.appPassword) },
        post("Noise", [noisy, huge])
      )
      const images = embeddedImages(yield* Effect.promise(() => network.getRecord(published.externalId)))
      const sent = yield* Effect.forEach(images, (embedded) =>
        Effect.flatMap(getBlob(network.serviceUrl, account.did, embedded.image.ref), (blob) =>
          Effect.promise(async () => ({ embedded, size: blob.byteLength, ...(await sharp(blob).metadata()) }))))
      for (const { embedded, format, height, size, width } of sent) {
        expect(size).toBeLessThanOrEqual(2_000_000)
        expect(format).toBe("jpeg")
        expect(embedded).toMatchObject({ aspectRatio: { width, height }, image: { mimeType: "image/jpeg", size } })
      }
      expect(sent.map(({ embedded: { alt }, height, width }) => ({ alt, width, height }))).toEqual([
        { alt: "Static", width: 1100, height: 1000 },
        { alt: "", width: 2000, height: 1333 }
      ])
      // The stored files are untouched.
      expect(sha256(yield* readStored(noisy))).toBe(noisy.sha256)
      expect(sha256(yield* readStored(huge))).toBe(huge.sha256)
    }).pipe(Effect.scoped))

  it.effect("a transparent image over the limit is sent as WebP, keeping its transparency", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const account = yield* Effect.promise(() => network.createAccount())
      const fixtures = yield* makeMediaFixtures
      const noisy = yield* fixtures.image({ width: 1200, height: 1200, format: "png", noise: true, alpha: true })
      expect(noisy.size).toBeGreaterThan(2_000_000)
      const published = yield* (yield* SocialProviders).publish(
        { id: "account-1", credentials: credentials(network.serviceUrl, account.handle, account.appPassword) },
        post("Transparent noise", [noisy])
      )
      const [embedded] = embeddedImages(yield* Effect.promise(() => network.getRecord(published.externalId)))
      const blob = yield* getBlob(network.serviceUrl, account.did, embedded.image.ref)
      expect(blob.byteLength).toBeLessThanOrEqual(2_000_000)
      expect(yield* Effect.promise(() => sharp(blob).metadata())).toMatchObject({ format: "webp", hasAlpha: true })
      expect(embedded).toMatchObject({ alt: "", image: { mimeType: "image/webp" } })
      expect(embedded.aspectRatio!.width).toBe(embedded.aspectRatio!.height)
    }).pipe(Effect.scoped))

  it.effect("validateMedia: at most 4 images, no video yet, and the image types Bluesky shows", () =>
    Effect.gen(function*() {
      const bluesky = (yield* SocialProviders).get("bluesky")
      expect(bluesky.validateMedia([image(), image(), image(), image({ contentType: "image/gif", size: 9_000_000 })])).toEqual([])
      expect(bluesky.validateMedia(Array.from({ length: 5 }, () => image()))).toEqual([
        { code: "media", message: "Bluesky takes at most 4 images; this post has 5" }
      ])
      expect(bluesky.validateMedia([image(), image({ kind: "video", contentType: "video/mp4" })])).toEqual([
        { code: "media", message: "Postline does not send videos to Bluesky yet; this post has a video" }
      ])
      expect(bluesky.validateMedia([image({ contentType: "image/avif" })])).toEqual([
        { code: "media", message: "Image 1 is image/avif, which Bluesky does not take" }
      ])
      expect(bluesky.validateMedia([])).toEqual([])
    }))

  it.effect("a repeat with the same key, in turn or at once, finds the first post: one record, one answer", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const providers = yield* SocialProviders
      const account = yield* Effect.promise(() => network.createAccount())
      const target = { id: "account-1", credentials: credentials(network.serviceUrl, account.handle, account.appPassword) }
      const request = { postId: "post-1", text: "Once only 🦋", idempotencyKey: "post-1:account-1", media: [] }

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
      const first = yield* providers.publish(target, { postId: "post-1", text: "The first text", idempotencyKey: "k", media: [] })

      const clash = yield* providers.publish(target, { postId: "post-1", text: "Another text", idempotencyKey: "k", media: [] }).pipe(
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
      const guarded = yield* Layer.build(SocialProviders.Default.pipe(Layer.provide(Outbound.Default({ allowPrivate: false })), Layer.provide(XSettings.Default), Layer.provide(BlueskyOAuthSettings.Default))).pipe(
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
    const decode = Schema.decodeUnknownEither(BlueskyAppPassword)
    const valid = decode({ provider: "bluesky", handle: "alice.bsky.social", appPassword: "abcd-efgh-ijkl-mnop" })
    expect(valid._tag === "Right" && valid.right).toMatchObject({ handle: "alice.bsky.social" })
    expect(valid._tag === "Right" && Redacted.value(valid.right.appPassword)).toBe("abcd-efgh-ijkl-mnop")
    const refused = decode({ provider: "bluesky", handle: "alice.bsky.social", appPassword: "my main password!" })
    expect(refused._tag).toBe("Left")
    expect(String(refused._tag === "Left" ? refused.left : "")).not.toContain("main password")
    expect(String(refused._tag === "Left" ? refused.left : "")).toContain("app password")
  })
})
