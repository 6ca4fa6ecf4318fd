import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Inspectable, Layer, Redacted, Schema } from "effect"
import { MastodonCredentials } from "../../src/Providers/Credentials.js"
import { SocialProviders } from "../../src/Providers/Registry.js"
import { mastodonLength } from "../../src/Providers/TextLength.js"
import { makeMastodonFake, type MastodonFake } from "../support/MastodonFake.js"
import { GuardedProviders, LocalProviders } from "../support/Providers.js"

const credentialsFor = (fake: MastodonFake, token = fake.token) =>
  Schema.decodeUnknownSync(MastodonCredentials)({ provider: "mastodon", instanceUrl: fake.url, accessToken: token })

const accountFor = (fake: MastodonFake) => ({ id: "account-1", credentials: credentialsFor(fake) })

const post = (text: string, idempotencyKey = crypto.randomUUID()) => ({ postId: "post-1", text, idempotencyKey })

describe("Mastodon", () => {
  it.scoped("verify reads the profile and the instance's own character limit", () =>
    Effect.gen(function*() {
      const fake = yield* makeMastodonFake({ maxCharacters: 1000 })
      const mastodon = (yield* SocialProviders).get("mastodon")
      const profile = yield* mastodon.verify(credentialsFor(fake))
      expect(profile).toEqual({
        handle: "@alice@mastodon.test",
        displayName: "Alice",
        avatarUrl: `${fake.url}/system/accounts/avatars/alice.png`,
        profileUrl: `${fake.url}/@alice`,
        limits: { maxLength: 1000, urlLength: 23 }
      })
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
      const reset = new Date(Date.now() + 300_000).toISOString()
      fake.answerNext({ status: 429, headers: { "x-ratelimit-reset": reset }, body: { error: "Too many requests" } })
      const limited = yield* publish()
      expect(limited.retryAfterSeconds).toBeGreaterThanOrEqual(299)
      expect(limited.retryAfterSeconds).toBeLessThanOrEqual(300)

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
})
