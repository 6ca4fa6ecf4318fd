import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schema } from "effect"
import { Outbound } from "../../src/Outbound/Outbound.js"
import type { IncomingHttpHeaders } from "node:http"
import { Webhook as StandardWebhook } from "standardwebhooks"
import { WebhookCredentials } from "../../src/Providers/Credentials.js"
import { SocialProviders } from "../../src/Providers/Registry.js"
import { XSettings } from "../../src/Providers/XSettings.js"
import { BlueskyOAuthSettings } from "../../src/Providers/BlueskyOAuthClient.js"
import { WebhookEvent } from "../../src/Providers/Webhook.js"
import { generateSigningSecret } from "../../src/Secrets/SignedWebhook.js"
import { makeLocalReceiver } from "../support/LocalServer.js"
import { makeMediaFixtures } from "../support/MediaFixtures.js"
import { LocalProviders } from "../support/Providers.js"

interface Delivery {
  readonly headers: IncomingHttpHeaders
  readonly body: string
  /** What standardwebhooks' own verification made of it, or why it refused. */
  readonly verified: unknown
}

/** A receiver that verifies each call with the Standard Webhooks library and answers what the test says. */
const makeReceiver = (secret: string) =>
  Effect.gen(function*() {
    const deliveries: Array<Delivery> = []
    const answers: Array<{ status: number; headers?: Record<string, string>; body?: string; delayMillis?: number }> = []
    const url = yield* makeLocalReceiver((request, response) => {
      let body = ""
      request.on("data", (chunk) => body += chunk)
      request.on("end", () => {
        let verified: unknown
        try {
          verified = new StandardWebhook(secret).verify(body, request.headers as Record<string, string>)
        } catch (error) {
          verified = error
        }
        deliveries.push({ headers: request.headers, body, verified })
        const answer = answers.shift() ?? { status: 204 }
        setTimeout(() => response.writeHead(answer.status, answer.headers).end(answer.body), answer.delayMillis ?? 0)
      })
    })
    return { url: `${url}/hooks/postline?token=s3cret`, deliveries, answerNext: (answer: (typeof answers)[number]) => answers.push(answer) }
  })

const credentials = (url: string, secret: string) =>
  Schema.decodeUnknownSync(WebhookCredentials)({ provider: "webhook", url, signingSecret: secret })

const post = { postId: "post-1", text: "Hello, webhook 👋", idempotencyKey: "publish-post-1", media: [] }

describe("Webhook", () => {
  it("generates Standard Webhooks signing secrets", () => {
    const secret = generateSigningSecret()
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32)
    expect(generateSigningSecret()).not.toBe(secret)
    expect(Redacted.value(credentials("https://example.com/", secret).signingSecret)).toBe(secret)
  })

  it.scoped("publishes a signed post.published event that the receiver verifies", () =>
    Effect.gen(function*() {
      const secret = generateSigningSecret()
      const receiver = yield* makeReceiver(secret)
      const account = { id: "account-7", credentials: credentials(receiver.url, secret) }
      const providers = yield* SocialProviders
      const published = yield* providers.publish(account, post)

      expect(receiver.deliveries).toHaveLength(1)
      const [delivery] = receiver.deliveries
      expect(delivery.verified).not.toBeInstanceOf(Error)
      const event = Schema.decodeUnknownSync(WebhookEvent)(delivery.verified)
      expect(event).toEqual({
        type: "post.published",
        timestamp: expect.any(String),
        data: {
          postId: "post-1",
          socialAccountId: "account-7",
          text: post.text,
          idempotencyKey: post.idempotencyKey,
          media: [],
          thread: [],
          firstComment: null
        }
      })
      expect(delivery.headers["content-type"]).toBe("application/json")
      // The same instant: the header in whole Unix seconds, the event to the millisecond.
      expect(Number(delivery.headers["webhook-timestamp"])).toBe(Math.floor(Date.parse(event.timestamp) / 1000))
      expect(published).toEqual({ externalId: delivery.headers["webhook-id"], url: null })

      // A retry of the same publish carries the same webhook-id, so that the receiver can drop it.
      yield* providers.publish(account, post)
      expect(receiver.deliveries[1].headers["webhook-id"]).toBe(delivery.headers["webhook-id"])
      const other = yield* providers.publish(account, { ...post, idempotencyKey: "another" })
      expect(other.externalId).not.toBe(published.externalId)

      // A receiver with another secret refuses the signature.
      const wrong = new StandardWebhook(generateSigningSecret())
      expect(() => wrong.verify(delivery.body, delivery.headers as Record<string, string>)).toThrow()
    }).pipe(Effect.provide(LocalProviders)))

  it.scoped("the signed event lists the post's media, in order, with their links; nothing about them is refused", () =>
    Effect.gen(function*() {
      const secret = generateSigningSecret()
      const receiver = yield* makeReceiver(secret)
      const fixtures = yield* makeMediaFixtures
      const media = [
        yield* fixtures.image({ width: 640, height: 480, format: "jpeg", altText: "A lighthouse" }),
        yield* fixtures.video({ size: 2_000_000 }),
        yield* fixtures.image({ width: 30, height: 20, format: "gif" })
      ]
      const providers = yield* SocialProviders
      expect(providers.get("webhook").validateMedia(media)).toEqual([])
      yield* providers.publish({ id: "account-7", credentials: credentials(receiver.url, secret) }, { ...post, media })

      const [delivery] = receiver.deliveries
      expect(delivery.verified).not.toBeInstanceOf(Error)
      const event = Schema.decodeUnknownSync(WebhookEvent)(delivery.verified)
      expect(event.data.media).toEqual(media.map((medium) => ({
        assetId: medium.assetId,
        kind: medium.kind,
        contentType: medium.contentType,
        size: medium.size,
        width: medium.width,
        height: medium.height,
        altText: medium.altText,
        sha256: medium.sha256,
        url: medium.url,
        urlExpiresAt: medium.urlExpiresAt
      })))
      expect(event.data.media.map(({ altText, contentType }) => [contentType, altText])).toEqual([
        ["image/jpeg", "A lighthouse"],
        ["video/mp4", null],
        ["image/gif", null]
      ])
      // Links only: the body stays small whatever the media weigh.
      expect(delivery.body.length).toBeLessThan(2000)
    }).pipe(Effect.provide(LocalProviders)))

  it.scoped("takes the receiver's own id and link when it answers them", () =>
    Effect.gen(function*() {
      const secret = generateSigningSecret()
      const receiver = yield* makeReceiver(secret)
      receiver.answerNext({
        status: 201,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ id: "ext-42", url: "https://blog.example.com/posts/42" })
      })
      const published = yield* (yield* SocialProviders).publish({ id: "a", credentials: credentials(receiver.url, secret) }, post)
      expect(published).toEqual({ externalId: "ext-42", url: "https://blog.example.com/posts/42" })
    }).pipe(Effect.provide(LocalProviders)))

  it.scoped("maps the receiver's answers to error categories", () =>
    Effect.gen(function*() {
      const secret = generateSigningSecret()
      const receiver = yield* makeReceiver(secret)
      const providers = yield* SocialProviders
      const failure = (answer: Parameters<typeof receiver.answerNext>[0]) => {
        receiver.answerNext(answer)
        return providers.publish({ id: "a", credentials: credentials(receiver.url, secret) }, post).pipe(Effect.flip)
      }
      expect(yield* failure({ status: 400 })).toMatchObject({ category: "invalid_content", retryable: false, providerStatus: 400 })
      expect(yield* failure({ status: 422 })).toMatchObject({ category: "invalid_content", providerStatus: 422 })
      expect(yield* failure({ status: 401 })).toMatchObject({ category: "auth", retryable: false })
      expect(yield* failure({ status: 429, headers: { "retry-after": "7" } })).toMatchObject({
        category: "rate_limited",
        retryable: true,
        retryAfterSeconds: 7
      })
      expect(yield* failure({ status: 500 })).toMatchObject({ category: "transient", retryable: true, providerStatus: 500 })
      expect(yield* failure({ status: 503 })).toMatchObject({ category: "transient", retryable: true })
      expect(yield* failure({ status: 307, headers: { location: "http://169.254.169.254/" } })).toMatchObject({
        category: "unknown",
        retryable: false
      })
      expect(receiver.deliveries).toHaveLength(7)
    }).pipe(Effect.provide(LocalProviders)))

  it.scoped("a receiver that does not answer in time is transient", () =>
    Effect.gen(function*() {
      const secret = generateSigningSecret()
      const receiver = yield* makeReceiver(secret)
      receiver.answerNext({ status: 204, delayMillis: 1000 })
      const error = yield* SocialProviders.pipe(
        Effect.flatMap((providers) => providers.publish({ id: "a", credentials: credentials(receiver.url, secret) }, post)),
        Effect.flip,
        Effect.provide(SocialProviders.Default.pipe(Layer.provide(Outbound.Default({ allowPrivate: true, totalTimeoutMillis: 200 })), Layer.provide(XSettings.Default), Layer.provide(BlueskyOAuthSettings.Default)))
      )
      expect(error).toMatchObject({ category: "transient", retryable: true, providerMessage: expect.stringContaining("did not answer") })
      expect(error.providerMessage).not.toContain("s3cret")
    }))

  it.scoped("verify checks the address without calling it", () =>
    Effect.gen(function*() {
      const secret = generateSigningSecret()
      const receiver = yield* makeReceiver(secret)
      const providers = yield* SocialProviders
      const profile = yield* providers.verify(credentials(receiver.url, secret))
      expect(profile).toEqual({
        networkUserId: null,
        handle: new URL(receiver.url).host,
        displayName: null,
        avatarUrl: null,
        profileUrl: null,
        limits: { maxLength: null, urlLength: null }
      })
      expect(receiver.deliveries).toHaveLength(0)
      const guarded = yield* SocialProviders.pipe(
        Effect.flatMap((providers) => providers.verify(credentials("https://169.254.169.254/hook", secret))),
        Effect.flip,
        Effect.provide(SocialProviders.Default.pipe(Layer.provide(Outbound.Default({ allowPrivate: false })), Layer.provide(XSettings.Default), Layer.provide(BlueskyOAuthSettings.Default)))
      )
      expect(guarded).toMatchObject({ category: "unknown", providerMessage: expect.stringContaining("link-local") })
      expect(providers.get("webhook").validate("")).toMatchObject([{ code: "empty" }])
      expect(providers.get("webhook").validate("x".repeat(10_000))).toEqual([])
    }).pipe(Effect.provide(LocalProviders)))

  it("credentials refuse a malformed secret without repeating it", () => {
    const error = Schema.decodeUnknownEither(WebhookCredentials)({ provider: "webhook", url: "https://x.example/", signingSecret: "hunter2" })
    expect(error._tag).toBe("Left")
    expect(String(error._tag === "Left" ? error.left : "")).not.toContain("hunter2")
  })
})
