import { describe, expect, it } from "@effect/vitest"
import { Context, Duration, Effect, Inspectable, Layer, Redacted, Schema } from "effect"
import { MastodonCredentials } from "../../src/Providers/Credentials.js"
import { MastodonMediaProcessing } from "../../src/Providers/MastodonMedia.js"
import { SocialProviders } from "../../src/Providers/Registry.js"
import { ContentLimits, type MediaFacts, type PublishMedia } from "../../src/Providers/SocialProvider.js"
import { mastodonLength } from "../../src/Providers/TextLength.js"
import { makeMastodonFake, type MastodonFake } from "../support/MastodonFake.js"
import { imageFacts, makeMediaFixtures } from "../support/MediaFixtures.js"
import { GuardedProviders, LocalProviders } from "../support/Providers.js"

const credentialsFor = (fake: MastodonFake, token = fake.token) =>
  Schema.decodeUnknownSync(MastodonCredentials)({ provider: "mastodon", instanceUrl: fake.url, accessToken: token })

const accountFor = (fake: MastodonFake) => ({ id: "account-1", credentials: credentialsFor(fake) })

const post = (text: string, idempotencyKey = crypto.randomUUID(), media: ReadonlyArray<PublishMedia> = []) => ({
  postId: "post-1",
  text,
  idempotencyKey,
  media
})

const image = imageFacts
const video = (facts: Partial<MediaFacts> = {}): MediaFacts => image({ kind: "video", contentType: "video/mp4", width: 1280, height: 720, ...facts })

const MiB = 1024 * 1024

describe("Mastodon", () => {
  it.scoped("verify reads the profile and the instance's own character and media limits", () =>
    Effect.gen(function*() {
      const fake = yield* makeMastodonFake({
        maxCharacters: 1000,
        maxMediaAttachments: 6,
        mediaConfiguration: {
          supported_mime_types: ["image/jpeg", "image/png", "video/mp4"],
          image_size_limit: 8 * MiB,
          video_size_limit: 40 * MiB,
          image_matrix_limit: 4096 * 4096,
          video_matrix_limit: 1920 * 1080,
          description_limit: 1000
        }
      })
      const mastodon = (yield* SocialProviders).get("mastodon")
      const profile = yield* mastodon.verify(credentialsFor(fake))
      expect(profile).toEqual({
        networkUserId: `${new URL(fake.url).host}/109000000000000001`,
        handle: "@alice@mastodon.test",
        displayName: "Alice",
        avatarUrl: `${fake.url}/system/accounts/avatars/alice.png`,
        profileUrl: `${fake.url}/@alice`,
        limits: {
          maxLength: 1000,
          urlLength: 23,
          media: {
            maxAttachments: 6,
            contentTypes: ["image/jpeg", "image/png", "video/mp4"],
            maxImageBytes: 8 * MiB,
            maxVideoBytes: 40 * MiB,
            maxImagePixels: 4096 * 4096,
            maxVideoPixels: 1920 * 1080,
            maxAltTextLength: 1000
          }
        }
      })
      // The limits as they are stored: they decode, as limits stored before media did.
      expect(Schema.decodeUnknownSync(ContentLimits)(JSON.parse(JSON.stringify(profile.limits)))).toEqual(profile.limits)
      expect(Schema.decodeUnknownSync(ContentLimits)({ maxLength: 500, urlLength: 23 })).toEqual({ maxLength: 500, urlLength: 23 })
      expect(fake.requests.map(({ path }) => path)).toEqual(["/api/v1/accounts/verify_credentials", "/api/v2/instance"])
      expect(fake.requests[0].headers.authorization).toBe(`Bearer ${fake.token}`)
    }).pipe(Effect.provide(LocalProviders)))

  it.scoped("credentials never show the token when printed or logged", () =>
    Effect.gen(function*() {
      const fake = yield* makeMastodonFake()
      const credentials = credentialsFor(fake)
      expect(JSON.stringify(credentials)).not.toContain(fake.token)
      expect(Inspectable.format(credentials)).not.toContain(fake.token)
      expect(String(credentials.accessToken)).toBe("<redacted>")
    }))

  it.scoped("verify with a bad token is an auth error with Mastodon's message", () =>
    Effect.gen(function*() {
      const fake = yield* makeMastodonFake()
      const error = yield* (yield* SocialProviders).verify(credentialsFor(fake, "wrong")).pipe(Effect.flip)
      expect(error).toMatchObject({
        category: "auth",
        retryable: false,
        providerStatus: 401,
        providerMessage: "The access token is invalid"
      })
    }).pipe(Effect.provide(LocalProviders)))

  it.scoped("publish posts the status with an Idempotency-Key, and a repeat returns the same status", () =>
    Effect.gen(function*() {
      const fake = yield* makeMastodonFake()
      const providers = yield* SocialProviders
      const request = post("Hello from Postline https://example.com/a/very/long/path/that/counts/as/23")
      const published = yield* providers.publish(accountFor(fake), request)
      const again = yield* providers.publish(accountFor(fake), request)
      expect(again).toEqual(published)
      expect(fake.statuses).toHaveLength(1)
      expect(fake.statuses[0]).toMatchObject({ id: published.externalId, text: request.text, idempotencyKey: request.idempotencyKey })
      expect(published.url).toBe(`${fake.url}/@alice/${published.externalId}`)
      const posts = fake.requests.filter(({ method }) => method === "POST")
      expect(posts.map(({ headers }) => headers["idempotency-key"])).toEqual([request.idempotencyKey, request.idempotencyKey])
      expect(JSON.parse(posts[0].body)).toEqual({ status: request.text })
    }).pipe(Effect.provide(LocalProviders)))

  // Live: polling waits between attempts.
  it.scopedLive("publish uploads each medium with its description, waits for processing, then names them in order", () =>
    Effect.gen(function*() {
      const fake = yield* makeMastodonFake({ processingPolls: 2 })
      const fixtures = yield* makeMediaFixtures
      const media = [
        yield* fixtures.image({ width: 640, height: 480, format: "jpeg", altText: "A lighthouse at dusk" }),
        yield* fixtures.image({ width: 300, height: 500, format: "png", altText: null }),
        yield* fixtures.image({ width: 800, height: 400, format: "webp", altText: "Ünïcödé 🦋 alt" })
      ]
      const request = post("Three pictures", crypto.randomUUID(), media)
      const published = yield* (yield* SocialProviders).publish(accountFor(fake), request)

      expect(fake.media.map(({ contentType, description, sha256, size }) => ({ contentType, description, sha256, size }))).toEqual(
        media.map(({ altText, contentType, sha256, size }) => ({ contentType, description: altText, sha256, size }))
      )
      expect(fake.media.map(({ fileName }) => fileName)).toEqual(media.map(({ assetId, contentType }) => `${assetId}.${contentType.slice(6)}`))
      expect(fake.statuses).toEqual([
        { id: published.externalId, text: request.text, idempotencyKey: request.idempotencyKey, mediaIds: fake.media.map(({ id }) => id) }
      ])
      // Each upload answered 202 and was polled until done (206, 206, 200) before the status named them.
      const calls = fake.requests.map(({ method, path }) => `${method} ${path.replace(/\d{6,}/, ":id")}`)
      expect(calls).toEqual([
        ...media.flatMap(() => ["POST /api/v2/media", "GET /api/v1/media/:id", "GET /api/v1/media/:id", "GET /api/v1/media/:id"]),
        "POST /api/v1/statuses"
      ])
      const [statusPost] = fake.requests.filter(({ path }) => path === "/api/v1/statuses")
      expect(statusPost.headers["idempotency-key"]).toBe(request.idempotencyKey)
      expect(JSON.parse(statusPost.body)).toEqual({ status: request.text, media_ids: fake.media.map(({ id }) => id) })

      // As Mastodon itself does, images processed during the upload are not polled; a video alone is.
      const direct = yield* makeMastodonFake({ processImagesAtOnce: true })
      const clip = yield* fixtures.video({ size: 300_000, altText: "A short clip" })
      yield* (yield* SocialProviders).publish(accountFor(direct), post("A picture", undefined, [media[0]]))
      yield* (yield* SocialProviders).publish(accountFor(direct), post("A clip", undefined, [clip]))
      expect(direct.requests.map(({ method, path }) => `${method} ${path.replace(/\d{6,}/, ":id")}`)).toEqual([
        "POST /api/v2/media",
        "POST /api/v1/statuses",
        "POST /api/v2/media",
        "GET /api/v1/media/:id",
        "GET /api/v1/media/:id",
        "POST /api/v1/statuses"
      ])
      expect(direct.media.map(({ contentType, description }) => ({ contentType, description }))).toEqual([
        { contentType: "image/jpeg", description: "A lighthouse at dusk" },
        { contentType: "video/mp4", description: "A short clip" }
      ])
      expect(direct.statuses.map(({ mediaIds }) => mediaIds)).toEqual([[direct.media[0].id], [direct.media[1].id]])
    }).pipe(Effect.provide(LocalProviders)))

  it.scopedLive("media still processing when the bound runs out is a transient error, and no status is posted", () =>
    Effect.gen(function*() {
      const fake = yield* makeMastodonFake({ processingPolls: Infinity })
      const fixtures = yield* makeMediaFixtures
      const clip = yield* fixtures.video({ size: 100_000 })
      const error = yield* (yield* SocialProviders).publish(accountFor(fake), post("Soon", undefined, [clip])).pipe(
        Effect.provideService(MastodonMediaProcessing, { timeout: Duration.seconds(1) }),
        Effect.flip
      )
      expect(error).toMatchObject({ provider: "mastodon", category: "transient", retryable: true })
      expect(error.providerMessage).toBe(`The server was still processing the video ${clip.assetId} after 1s`)
      // Polled several times, backing off, and never posted: it gave up at its bound, not later.
      const polls = fake.requests.filter(({ method }) => method === "GET").length
      expect(polls).toBeGreaterThanOrEqual(3)
      expect(polls).toBeLessThanOrEqual(5)
      expect(fake.statuses).toHaveLength(0)
    }).pipe(Effect.provide(LocalProviders)))

  it.scoped("a medium the server refuses is invalid_content", () =>
    Effect.gen(function*() {
      const fake = yield* makeMastodonFake({ mediaConfiguration: { image_size_limit: 1000 } })
      const fixtures = yield* makeMediaFixtures
      const large = yield* fixtures.image({ width: 200, height: 200, noise: true })
      const error = yield* (yield* SocialProviders).publish(accountFor(fake), post("Too big", undefined, [large])).pipe(Effect.flip)
      expect(error).toMatchObject({ category: "invalid_content", retryable: false, providerStatus: 422 })
      expect(error.providerMessage).toContain("File file size must be less than 1000 Bytes")
      expect(fake.statuses).toHaveLength(0)
    }).pipe(Effect.provide(LocalProviders)))

  it.scoped("maps each kind of failure", () =>
    Effect.gen(function*() {
      const fake = yield* makeMastodonFake()
      const providers = yield* SocialProviders
      const publish = (text = "Hello") => providers.publish(accountFor(fake), post(text)).pipe(Effect.flip)

      expect(yield* publish("x".repeat(501))).toMatchObject({
        category: "invalid_content",
        retryable: false,
        providerStatus: 422,
        providerMessage: "Validation failed: Text character limit of 500 exceeded"
      })

      fake.answerNext({ status: 429, headers: { "retry-after": "120" }, body: { error: "Too many requests" } })
      expect(yield* publish()).toMatchObject({ category: "rate_limited", retryable: true, retryAfterSeconds: 120, providerStatus: 429 })

      // Mastodon itself sends X-RateLimit-Reset, an ISO 8601 time.
      const reset = Date.now() + 300_000
      fake.answerNext({ status: 429, headers: { "x-ratelimit-reset": new Date(reset).toISOString() }, body: { error: "Too many requests" } })
      const asked = Date.now()
      const limited = yield* publish()
      const answered = Date.now()
      // The seconds from when the answer was read to the reset, whole: however long the machine took to read it.
      expect(limited.retryAfterSeconds).toBeGreaterThanOrEqual(Math.floor((reset - answered) / 1000))
      expect(limited.retryAfterSeconds).toBeLessThanOrEqual(Math.ceil((reset - asked) / 1000))

      fake.answerNext({ status: 503, body: { error: "Service Unavailable" } })
      expect(yield* publish()).toMatchObject({ category: "transient", retryable: true, providerStatus: 503 })

      fake.answerNext({ status: 404, body: { error: "Record not found" } })
      expect(yield* publish()).toMatchObject({ category: "unknown", retryable: false, providerStatus: 404 })

      const wrongToken = { id: "account-1", credentials: credentialsFor(fake, "wrong") }
      expect(yield* providers.publish(wrongToken, post("Hello")).pipe(Effect.flip)).toMatchObject({ category: "auth" })

      expect(fake.statuses).toHaveLength(0)
    }).pipe(Effect.provide(LocalProviders)))

  it.scoped("an unreachable instance is transient; with the production guard a local one is refused before any call", () =>
    Effect.gen(function*() {
      const fake = yield* makeMastodonFake()
      const closedPort = { provider: "mastodon" as const, instanceUrl: "http://127.0.0.1:1", accessToken: Redacted.make("x") }
      const unreachable = yield* SocialProviders.pipe(
        Effect.flatMap((providers) => providers.verify(closedPort)),
        Effect.flip,
        Effect.provide(LocalProviders)
      )
      expect(unreachable).toMatchObject({ category: "transient", retryable: true })

      const guarded = yield* Layer.build(GuardedProviders).pipe(Effect.map(Context.get(SocialProviders)))
      expect(yield* guarded.verify(credentialsFor(fake)).pipe(Effect.flip)).toMatchObject({
        category: "unknown",
        retryable: false,
        providerMessage: expect.stringContaining("only https")
      })
      const https = { ...credentialsFor(fake), instanceUrl: fake.url.replace("http:", "https:") }
      expect(yield* guarded.verify(https).pipe(Effect.flip)).toMatchObject({
        category: "unknown",
        providerMessage: expect.stringContaining("loopback")
      })
      expect(fake.requests).toHaveLength(0)
    }))

  describe("validateMedia", () => {
    it.scoped("with the limits the instance told at verify", () =>
      Effect.gen(function*() {
        const fake = yield* makeMastodonFake({
          maxMediaAttachments: 2,
          mediaConfiguration: { supported_mime_types: ["image/jpeg", "image/png", "video/mp4"], image_size_limit: 2 * MiB }
        })
        const mastodon = (yield* SocialProviders).get("mastodon")
        const { limits } = yield* mastodon.verify(credentialsFor(fake))
        expect(mastodon.validateMedia([image(), image({ contentType: "image/png" })], limits)).toEqual([])
        expect(mastodon.validateMedia([image(), image(), image()], limits)).toEqual([
          { code: "media", message: "This Mastodon server takes at most 2 attachments; this post has 3" }
        ])
        expect(mastodon.validateMedia([image({ size: 3 * MiB + 100_000 }), image({ contentType: "image/webp" })], limits)).toEqual([
          { code: "media", message: "Image 1 is 3.1 MB; this Mastodon server takes images up to 2 MB" },
          { code: "media", message: "Image 2 is image/webp, which this Mastodon server does not take" }
        ])
        // The defaults apply elsewhere: the same WebP is fine there.
        expect(mastodon.validateMedia([image({ contentType: "image/webp" })])).toEqual([])
      }).pipe(Effect.provide(LocalProviders)))

    it.scoped("with Mastodon's defaults when the limits do not say: 4 attachments, images 16 MB, video 99 MB", () =>
      Effect.gen(function*() {
        const mastodon = (yield* SocialProviders).get("mastodon")
        const stored = { maxLength: 500, urlLength: 23 }
        expect(mastodon.validateMedia([image(), image(), image(), image()], stored)).toEqual([])
        expect(mastodon.validateMedia([image({ size: 16 * MiB })], stored)).toEqual([])
        expect(mastodon.validateMedia([video({ size: 99 * MiB })], stored)).toEqual([])
        expect(mastodon.validateMedia(Array.from({ length: 5 }, () => image()), stored)).toEqual([
          { code: "media", message: "This Mastodon server takes at most 4 attachments; this post has 5" }
        ])
        expect(mastodon.validateMedia([image({ size: 16 * MiB + 1 }), video({ size: 120 * MiB })], stored)).toEqual([
          { code: "media", message: "Mastodon takes a video only on its own; this post has a video and other media" },
          { code: "media", message: "Image 1 is 16.1 MB; this Mastodon server takes images up to 16 MB" },
          { code: "media", message: "Video 2 is 120 MB; this Mastodon server takes videos up to 99 MB" }
        ])
        expect(mastodon.validateMedia([image({ width: 10_000, height: 5_000 }), image({ altText: "é".repeat(1501) })], stored))
          .toEqual([
            { code: "media", message: "Image 1 is 10000×5000 pixels; this Mastodon server takes images of at most 33177600 pixels" },
            { code: "media", message: "Image 2's alt text is 1501 characters long; this Mastodon server takes 1500" }
          ])
      }).pipe(Effect.provide(LocalProviders)))
  })

  describe("validate counts as Mastodon does", () => {
    it("every URL as 23 characters, a remote mention as its username, and grapheme clusters", () => {
      expect(mastodonLength("https://example.com/" + "a".repeat(200), 23)).toBe(23)
      expect(mastodonLength("see https://example.com/x.", 23)).toBe(4 + 23 + 1)
      expect(mastodonLength("(https://example.com/x)", 23)).toBe(1 + 23 + 1)
      expect(mastodonLength("hi @bob@very.long.example.social!", 23)).toBe("hi @bob!".length)
      expect(mastodonLength("hi @bob", 23)).toBe(7)
      expect(mastodonLength("mail me: bob@example.com", 23)).toBe(24)
      expect(mastodonLength("👍🏽🇫🇷é", 23)).toBe(3)
      expect(mastodonLength("https://example.com/@bob", 23)).toBe(23)
    })

    it.scoped("with the instance's limits", () =>
      Effect.gen(function*() {
        const mastodon = (yield* SocialProviders).get("mastodon")
        expect(mastodon.validate("ok")).toEqual([])
        expect(mastodon.validate("  ")).toMatchObject([{ code: "empty" }])
        const long = "x".repeat(476) + " https://example.com/" + "y".repeat(100)
        expect(mastodon.validate(long)).toEqual([])
        expect(mastodon.validate("x".repeat(501))).toMatchObject([{ code: "too_long", length: 501, maxLength: 500 }])
        expect(mastodon.validate("x".repeat(501), { maxLength: 1000, urlLength: 23 })).toEqual([])
      }).pipe(Effect.provide(LocalProviders)))
  })
  describe("analytics (the fake follows the documented API: no Mastodon server can run here)", () => {
    it.scoped("engagement reads a batch of statuses in one call, with their counts and raw answers; gone ones are left out", () =>
      Effect.gen(function*() {
        const fake = yield* makeMastodonFake()
        const mastodon = (yield* SocialProviders).get("mastodon")
        const first = yield* mastodon.publish(accountFor(fake), post("one"))
        const second = yield* mastodon.publish(accountFor(fake), post("two"))
        fake.setCounts(first.externalId, { favourites_count: 3, reblogs_count: 2, replies_count: 1, quotes_count: 4 })
        const before = fake.requests.length
        const read = yield* mastodon.analytics!.engagement(accountFor(fake), [first.externalId, second.externalId, "999"])
        expect(fake.requests.slice(before).map(({ method, path }) => `${method} ${decodeURIComponent(path)}`)).toEqual([
          `GET /api/v1/statuses?id[]=${first.externalId}&id[]=${second.externalId}&id[]=999`
        ])
        expect(read.map(({ raw: _, ...counts }) => counts)).toEqual([
          { externalId: first.externalId, likes: 3, reposts: 2, replies: 1, quotes: 4, views: null },
          { externalId: second.externalId, likes: 0, reposts: 0, replies: 0, quotes: 0, views: null }
        ])
        expect(read[0]!.raw).toMatchObject({ id: first.externalId, favourites_count: 3, content: "<p>one</p>" })
        expect(mastodon.analytics!.batchSize).toBe(20)
      }).pipe(Effect.provide(LocalProviders)))

    it.scoped("account counts come from verify_credentials; a revoked token is an auth error", () =>
      Effect.gen(function*() {
        const fake = yield* makeMastodonFake()
        const mastodon = (yield* SocialProviders).get("mastodon")
        yield* mastodon.publish(accountFor(fake), post("one"))
        fake.setAccountCounts({ followers_count: 42, following_count: 7 })
        const counts = yield* mastodon.analytics!.accountCounts(accountFor(fake))
        expect({ ...counts, raw: undefined }).toEqual({ followers: 42, following: 7, posts: 1, raw: undefined })
        expect(counts.raw).toMatchObject({ username: "alice", followers_count: 42 })
        fake.revokeToken()
        const refused = yield* Effect.flip(mastodon.analytics!.engagement(accountFor(fake), ["1"]))
        expect(refused).toMatchObject({ provider: "mastodon", category: "auth", providerStatus: 401 })
      }).pipe(Effect.provide(LocalProviders)))

    it.scoped("a webhook has no analytics", () =>
      Effect.gen(function*() {
        expect((yield* SocialProviders).get("webhook").analytics).toBeNull()
      }).pipe(Effect.provide(LocalProviders)))
  })
})
