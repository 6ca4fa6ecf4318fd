import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { createHash } from "node:crypto"
import { Outbound } from "../../src/Outbound/Outbound.js"
import type { MediaFacts, PublishMedia } from "../../src/Providers/SocialProvider.js"
import { X } from "../../src/Providers/X.js"
import { XMediaProcessing } from "../../src/Providers/XMedia.js"
import { XSettings } from "../../src/Providers/XSettings.js"
import { xWeightedLength } from "../../src/Providers/XText.js"
import { imageFacts, makeMediaFixtures } from "../support/MediaFixtures.js"
import { makeXFake, type XFake, type XFakeOptions } from "../support/XFake.js"

/** The X adapter against a fake X, allowed to reach this machine (or not, with `allowPrivate: false`). */
const xAgainst = (fake: XFake, allowPrivate = true) =>
  Layer.build(X.Default.pipe(
    Layer.provide(Outbound.Default({ allowPrivate })),
    Layer.provide(Layer.succeed(XSettings, XSettings.make({
      clientId: fake.clientId,
      clientSecret: Redacted.make(fake.clientSecret),
      apiUrl: fake.url,
      authorizeUrl: fake.authorizeUrl
    })))
  )).pipe(Effect.map(Context.get(X)))

const setup = (options: XFakeOptions = {}) =>
  Effect.gen(function*() {
    const fake = yield* makeXFake(options)
    const { accessToken } = fake.grant()
    const account = {
      id: "account-1",
      credentials: {
        provider: "x" as const,
        userId: fake.user.id,
        accessToken: Redacted.make(accessToken),
        refreshToken: null,
        expiresAt: null,
        scope: "tweet.read tweet.write users.read media.write offline.access"
      }
    }
    return { fake, x: yield* xAgainst(fake), account }
  })

const post = (text: string, media: ReadonlyArray<PublishMedia> = [], parentId?: string) => ({
  postId: "post-1",
  idempotencyKey: crypto.randomUUID(),
  text,
  media,
  ...(parentId ? { replyTo: { root: { externalId: parentId, reference: null }, parent: { externalId: parentId, reference: null } } } : {})
})

const part = ({ externalId }: { readonly externalId: string }) => ({ externalId, reference: null })
const calls = (fake: XFake) => fake.requests.map(({ method, path }) => `${method} ${path.replace(/\d{12,}/g, ":id")}`)
const MB = 1024 * 1024

describe("X (API v2, against a fake X that follows its documentation)", () => {
  it.scopedLive("verify reads the user: X's id, @username, name, avatar, profile URL and X's limits", () =>
    Effect.gen(function*() {
      const { account, fake, x } = yield* setup()
      expect(yield* x.verify(account.credentials)).toEqual({
        networkUserId: fake.user.id,
        handle: "@alice_x",
        displayName: "Alice",
        avatarUrl: "https://pbs.twimg.com/profile_images/1/alice_normal.jpg",
        profileUrl: "https://x.com/alice_x",
        limits: { maxLength: 280, urlLength: 23 }
      })
      expect(fake.requests.map(({ path }) => path)).toEqual(["/2/users/me?user.fields=profile_image_url,username,name"])
    }))

  it.scopedLive("publish posts the text and answers X's id and a status URL", () =>
    Effect.gen(function*() {
      const { account, fake, x } = yield* setup()
      const published = yield* x.publish(account, post("Hello from Postline"))
      expect(fake.tweets.at(-1)).toEqual({ id: published.externalId, authorId: fake.user.id, text: "Hello from Postline" })
      expect(published).toEqual({ externalId: published.externalId, url: `https://x.com/i/web/status/${published.externalId}` })
      expect(JSON.parse(fake.requests[0]!.body)).toEqual({ text: "Hello from Postline" })
      expect(fake.requests[0]!.headers["content-type"]).toBe("application/json")
    }))

  it.scopedLive("a thread: each part replies to the part before; a reply to a post X no longer has is refused", () =>
    Effect.gen(function*() {
      const { account, fake, x } = yield* setup()
      const first = yield* x.publish(account, post("1/ a thread"))
      const second = yield* x.publish(account, post("2/ its second part", [], first.externalId))
      expect(fake.tweets.at(-1)).toMatchObject({ id: second.externalId, inReplyToId: first.externalId })
      expect(JSON.parse(fake.requests.at(-1)!.body)).toEqual({ text: "2/ its second part", reply: { in_reply_to_tweet_id: first.externalId } })

      yield* x.remove(account, { postId: "post-1", idempotencyKey: "k", parts: [part(first)] })
      const orphan = yield* x.publish(account, post("3/ too late", [], first.externalId)).pipe(Effect.flip)
      expect(orphan).toMatchObject({
        category: "invalid_content",
        providerStatus: 400,
        providerMessage: "The Tweet you are replying to has been deleted or is not visible to you."
      })
    }))

  it.scopedLive("images: initialize, append, finalize, alt text for the one that has it, then the post names them in order", () =>
    Effect.gen(function*() {
      const { account, fake, x } = yield* setup()
      const fixtures = yield* makeMediaFixtures
      const media = [
        yield* fixtures.image({ width: 640, height: 480, format: "jpeg", altText: "A lighthouse at dusk 🌅" }),
        yield* fixtures.image({ width: 300, height: 500, format: "png", altText: null })
      ]
      const published = yield* x.publish(account, post("Two pictures", media))

      expect(calls(fake)).toEqual([
        "POST /2/media/upload/initialize", "POST /2/media/upload/:id/append", "POST /2/media/upload/:id/finalize", "POST /2/media/metadata",
        "POST /2/media/upload/initialize", "POST /2/media/upload/:id/append", "POST /2/media/upload/:id/finalize",
        "POST /2/tweets"
      ])
      expect(JSON.parse(fake.requests[0]!.body)).toEqual({ media_type: "image/jpeg", total_bytes: media[0]!.size, media_category: "tweet_image" })
      expect(fake.uploads.map((upload) => ({
        mediaType: upload.mediaType,
        altText: upload.altText,
        sha256: createHash("sha256").update(Buffer.concat(upload.chunks)).digest("hex")
      }))).toEqual(media.map(({ altText, contentType, sha256 }) => ({ mediaType: contentType, altText, sha256 })))
      expect(fake.tweets.at(-1)).toMatchObject({ id: published.externalId, mediaIds: fake.uploads.map(({ id }) => id) })
    }))

  it.scopedLive("a video goes in 4 MiB segments, in order, and is polled (STATUS) until X has processed it", () =>
    Effect.gen(function*() {
      const { account, fake, x } = yield* setup({ processingPolls: 2, checkAfterSecs: 0 })
      const fixtures = yield* makeMediaFixtures
      const clip = yield* fixtures.video({ size: 4 * MB + 1000, altText: "A short clip" })
      const published = yield* x.publish(account, post("A clip", [clip]))
      expect(calls(fake)).toEqual([
        "POST /2/media/upload/initialize", "POST /2/media/upload/:id/append", "POST /2/media/upload/:id/append",
        "POST /2/media/upload/:id/finalize",
        "GET /2/media/upload?command=STATUS&media_id=:id", "GET /2/media/upload?command=STATUS&media_id=:id",
        "POST /2/media/metadata", "POST /2/tweets"
      ])
      const [upload] = fake.uploads
      expect(upload).toMatchObject({ category: "amplify_video", totalBytes: clip.size, altText: "A short clip", pollsLeft: 0 })
      expect(upload!.chunks.map((chunk) => chunk.length)).toEqual([4 * MB, 1000])
      expect(fake.tweets.at(-1)).toMatchObject({ id: published.externalId, mediaIds: [upload!.id] })
    }))

  it.scopedLive("a video X still processes when the bound runs out is transient, and nothing is posted", () =>
    Effect.gen(function*() {
      const { account, fake, x } = yield* setup({ processingPolls: Infinity, checkAfterSecs: 0 })
      const clip = yield* (yield* makeMediaFixtures).video({ size: 10_000 })
      const error = yield* x.publish(account, post("Soon", [clip])).pipe(
        Effect.provideService(XMediaProcessing, { timeout: Duration.seconds(1) }),
        Effect.flip
      )
      expect(error).toMatchObject({ provider: "x", category: "transient", retryable: true })
      expect(error.providerMessage).toBe(`X was still processing the video ${clip.assetId} after 1s`)
      expect(fake.tweets.filter(({ authorId }) => authorId === fake.user.id)).toHaveLength(0)
    }))

  it.scopedLive("remove deletes each part; a part X no longer has counts as removed", () =>
    Effect.gen(function*() {
      const { account, fake, x } = yield* setup()
      const first = yield* x.publish(account, post("one"))
      const second = yield* x.publish(account, post("two"))
      yield* x.remove(account, { postId: "post-1", idempotencyKey: "k", parts: [part(first)] })
      yield* x.remove(account, { postId: "post-1", idempotencyKey: "k", parts: [part(first), part(second)] })
      expect(fake.deleted).toEqual([first.externalId, second.externalId])
      expect(calls(fake).filter((call) => call.startsWith("DELETE"))).toEqual(Array(3).fill("DELETE /2/tweets/:id"))
    }))

  describe("validate counts as X does (twitter-text)", () => {
    it("weighted: Latin 1, CJK and emoji 2, every URL 23, normalized first", () => {
      expect(xWeightedLength("a".repeat(280))).toBe(280)
      expect(xWeightedLength("日本語")).toBe(6)
      expect(xWeightedLength("👨‍👩‍👧‍👦🇫🇷👍🏽")).toBe(6)
      expect(xWeightedLength(`see https://example.com/${"a".repeat(200)}`)).toBe(4 + 23)
      expect(xWeightedLength("e\u0301")).toBe(1)
    })

    it.scopedLive("at and past 280, and the fake X refuses what validate refuses", () =>
      Effect.gen(function*() {
        const { account, x } = yield* setup()
        const cases = [
          ["a".repeat(280), "a".repeat(281), 281],
          ["漢".repeat(140), "漢".repeat(141), 282],
          ["🦋".repeat(140), "🦋".repeat(140) + "!", 281],
          ["a".repeat(256) + " https://example.com/" + "p".repeat(300), "a".repeat(257) + " https://example.com/" + "p".repeat(300), 281]
        ] as const
        for (const [fits, over, length] of cases) {
          expect(x.validate(fits)).toEqual([])
          expect(x.validate(over)).toEqual([{
            code: "too_long",
            message: `The text is ${length} characters long; the limit is 280`,
            length,
            maxLength: 280
          }])
          yield* x.publish(account, post(fits))
          expect(yield* x.publish(account, post(over)).pipe(Effect.flip)).toMatchObject({ category: "invalid_content", providerStatus: 403 })
        }
        expect(x.validate(" ")).toMatchObject([{ code: "empty" }])
      }))
  })

  it.scoped("validateMedia: 4 images or 1 video or GIF; images 5 MB, GIFs 15 MB, video 512 MB; alt text 1000", () =>
    Effect.gen(function*() {
      const { x } = yield* setup()
      const image = imageFacts
      const video = (facts: Partial<MediaFacts> = {}) => image({ kind: "video", contentType: "video/mp4", ...facts })
      const gif = (facts: Partial<MediaFacts> = {}) => image({ contentType: "image/gif", ...facts })
      expect(x.validateMedia([image(), image(), image(), image({ contentType: "image/webp", size: 5 * MB, altText: "é".repeat(1000) })])).toEqual([])
      expect(x.validateMedia([video({ size: 512 * MB })])).toEqual([])
      expect(x.validateMedia([gif({ size: 15 * MB })])).toEqual([])
      expect(x.validateMedia(Array.from({ length: 5 }, () => image())).map(({ message }) => message))
        .toEqual(["X takes at most 4 images in a post; this post has 5"])
      const alone = "X takes a video or an animated GIF only on its own; this post has other media besides"
      expect(x.validateMedia([video(), image()]).map(({ message }) => message)).toEqual([alone])
      expect(x.validateMedia([gif(), image()]).map(({ message }) => message)).toEqual([alone])
      expect(x.validateMedia([image({ size: 5 * MB + 1 }), gif({ size: 15 * MB + 1 }), video({ size: 512 * MB + 1 })]).map(({ message }) => message)).toEqual([
        alone,
        "Image 1 is 5.1 MB; X takes images up to 5 MB",
        "Image 2 is 15.1 MB; X takes GIFs up to 15 MB",
        "Video 3 is 512.1 MB; X takes videos up to 512 MB"
      ])
      expect(x.validateMedia([image({ altText: "é".repeat(1001) }), image({ contentType: "image/heic" })])).toEqual([
        { code: "media", message: "Image 1's alt text is 1001 characters long; X takes 1000" },
        { code: "media", message: "Image 2 is image/heic, which X does not take" }
      ])
    }))

  it.scopedLive("maps X's answers: 401 auth, 429 with x-rate-limit-reset, 5xx transient, duplicates and error lists", () =>
    Effect.gen(function*() {
      const { account, fake, x } = yield* setup()
      const publish = (text = "Hello") => x.publish(account, post(text)).pipe(Effect.flip)
      const wrongToken = { ...account, credentials: { ...account.credentials, accessToken: Redacted.make("wrong") } }
      expect(yield* x.publish(wrongToken, post("Hello")).pipe(Effect.flip)).toMatchObject({
        category: "auth", retryable: false, providerStatus: 401, providerMessage: "Unauthorized"
      })

      const reset = Math.floor(Date.now() / 1000) + 600
      fake.answerNext({ status: 429, headers: { "x-rate-limit-limit": "100", "x-rate-limit-remaining": "0", "x-rate-limit-reset": String(reset) }, body: { title: "Too Many Requests", detail: "Too Many Requests", type: "about:blank", status: 429 } })
      const asked = Date.now()
      const limited = yield* publish()
      const answered = Date.now()
      expect(limited).toMatchObject({ category: "rate_limited", retryable: true, providerStatus: 429 })
      expect(limited.retryAfterSeconds).toBeGreaterThanOrEqual(Math.floor(reset - answered / 1000))
      expect(limited.retryAfterSeconds).toBeLessThanOrEqual(Math.ceil(reset - asked / 1000))

      fake.answerNext({ status: 503, body: { title: "Service Unavailable", detail: "Service Unavailable", type: "about:blank", status: 503 } })
      expect(yield* publish()).toMatchObject({ category: "transient", retryable: true, providerStatus: 503 })

      yield* x.publish(account, post("Only once"))
      expect(yield* publish("Only once")).toMatchObject({
        category: "invalid_content", retryable: false, providerStatus: 403,
        providerMessage: "You are not allowed to create a Tweet with duplicate content."
      })

      fake.answerNext({ status: 400, body: { errors: [{ message: "first" }, { message: "second" }] } })
      expect(yield* publish()).toMatchObject({ category: "invalid_content", providerMessage: "first; second" })

      fake.answerNext({ status: 403, body: { title: "Client Forbidden", detail: "This app is not attached to a Project", type: "https://api.twitter.com/2/problems/client-forbidden", reason: "client-not-enrolled" } })
      expect(yield* publish()).toMatchObject({ category: "unknown", retryable: false, providerStatus: 403 })

      // A token granted without media.write cannot upload: the account must be connected again.
      const narrow = { ...account, credentials: { ...account.credentials, accessToken: Redacted.make(fake.grant(["tweet.read", "tweet.write", "users.read"]).accessToken) } }
      const image = yield* (yield* makeMediaFixtures).image({ width: 10, height: 10 })
      expect(yield* x.publish(narrow, post("With a picture", [image])).pipe(Effect.flip)).toMatchObject({
        category: "auth", providerStatus: 403, providerMessage: "Missing scope: media.write"
      })
    }))

  it.scopedLive("the production guard refuses a loopback X before any call", () =>
    Effect.gen(function*() {
      const { account, fake } = yield* setup()
      const guarded = yield* xAgainst(fake, false)
      const before = fake.requests.length
      expect(yield* guarded.verify(account.credentials).pipe(Effect.flip)).toMatchObject({ category: "unknown", retryable: false })
      expect(fake.requests).toHaveLength(before)
    }))

  describe("analytics", () => {
    it.scopedLive("engagement reads up to 100 posts in one call with public_metrics; gone ones are left out", () =>
      Effect.gen(function*() {
        const { account, fake, x } = yield* setup()
        const first = yield* x.publish(account, post("one"))
        const second = yield* x.publish(account, post("two"))
        fake.setCounts(first.externalId, { like_count: 3, retweet_count: 2, reply_count: 1, quote_count: 4, impression_count: 120 })
        const before = fake.requests.length
        const read = yield* x.analytics!.engagement(account, [first.externalId, second.externalId, "1999999999999999999"])
        expect(fake.requests.slice(before).map(({ path }) => decodeURIComponent(path))).toEqual([
          `/2/tweets?ids=${first.externalId},${second.externalId},1999999999999999999&tweet.fields=public_metrics`
        ])
        expect(read.map(({ raw: _, ...counts }) => counts)).toEqual([
          { externalId: first.externalId, likes: 3, reposts: 2, replies: 1, quotes: 4, views: 120 },
          { externalId: second.externalId, likes: 0, reposts: 0, replies: 0, quotes: 0, views: 0 }
        ])
        expect(read[0]!.raw).toMatchObject({ id: first.externalId, text: "one" })
        expect(x.analytics!.batchSize).toBe(100)
        expect(yield* x.analytics!.engagement(account, ["1999999999999999999"])).toEqual([])
      }))

    it.scopedLive("account counts come from users/me's public_metrics", () =>
      Effect.gen(function*() {
        const { account, fake, x } = yield* setup()
        yield* x.publish(account, post("one"))
        fake.setAccountCounts({ followers_count: 42, following_count: 7 })
        const counts = yield* x.analytics!.accountCounts(account)
        expect({ ...counts, raw: undefined }).toEqual({ followers: 42, following: 7, posts: 1, raw: undefined })
        expect(counts.raw).toMatchObject({ data: { username: "alice_x", public_metrics: { followers_count: 42 } } })
        expect(fake.requests.at(-1)!.path).toBe("/2/users/me?user.fields=public_metrics")
      }))
  })
})
