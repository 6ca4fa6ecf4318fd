import { Effect, Option, Redacted, Schema } from "effect"
import { createHash } from "node:crypto"
import { Outbound } from "../Outbound/Outbound.js"
import { fromOutbound, fromStatus } from "./Errors.js"
import { defaultContentLimits } from "./Rules.js"
import { signedWebhookRequest } from "../Secrets/SignedWebhook.js"
import type { ContentLimits, PublishMedia, PublishPart, SocialAccountOf, SocialProvider } from "./SocialProvider.js"
import { lengthProblems, graphemeLength } from "./TextLength.js"

/**
 * The body of each webhook call (docs/webhooks.md): JSON, signed by the Standard Webhooks scheme in the
 * `webhook-id`, `webhook-timestamp` and `webhook-signature` headers.
 *
 * ```json
 * { "type": "post.published",
 *   "timestamp": "2026-11-23T10:00:00.000Z",
 *   "data": { "postId": "…", "socialAccountId": "…", "text": "Hello", "idempotencyKey": "…",
 *             "media": [{ "assetId": "…", "kind": "image", "contentType": "image/jpeg", "size": 183204,
 *                         "width": 1600, "height": 900, "altText": "…", "sha256": "…",
 *                         "url": "https://…", "urlExpiresAt": "2026-11-24T10:00:00.000Z" }],
 *             "thread": [{ "text": "…", "media": [] }], "firstComment": null } }
 * ```
 *
 * The receiver fetches each medium from its `url` (no credentials needed) before `urlExpiresAt`. A thread comes
 * whole, in one event; `post.deleted` asks the receiver to take down what it made of a post.
 */
export const WebhookMedia = Schema.Struct({
  assetId: Schema.String,
  kind: Schema.Literal("image", "video"),
  contentType: Schema.String,
  /** In bytes. */
  size: Schema.Int,
  width: Schema.NullOr(Schema.Int),
  height: Schema.NullOr(Schema.Int),
  altText: Schema.NullOr(Schema.String),
  /** Hex SHA-256 of the file at `url`. */
  sha256: Schema.String,
  url: Schema.String,
  /** ISO 8601; at least 24 hours after the attempt. */
  urlExpiresAt: Schema.String
})
export type WebhookMedia = typeof WebhookMedia.Type

const WebhookPart = Schema.Struct({ text: Schema.String, media: Schema.Array(WebhookMedia) })

export const WebhookEvent = Schema.Struct({
  type: Schema.Literal("post.published"),
  /** When this attempt was sent (ISO 8601); `webhook-timestamp` holds the same instant in Unix seconds. */
  timestamp: Schema.String,
  data: Schema.Struct({
    postId: Schema.String,
    socialAccountId: Schema.String,
    text: Schema.String,
    idempotencyKey: Schema.String,
    /** The post's images and videos, in order; empty when it has none. */
    media: Schema.Array(WebhookMedia),
    /** A thread's parts after the first, in order; empty when it is no thread. */
    thread: Schema.Array(WebhookPart),
    firstComment: Schema.NullOr(WebhookPart)
  })
})
export type WebhookEvent = typeof WebhookEvent.Type

/** Sent when the post is taken down (unpublish): the receiver removes what it made of it. */
export const WebhookDeletedEvent = Schema.Struct({
  type: Schema.Literal("post.deleted"),
  timestamp: Schema.String,
  data: Schema.Struct({
    postId: Schema.String,
    socialAccountId: Schema.String,
    idempotencyKey: Schema.String,
    /** What the receiver answered for the post when it was published (its id, else the message id). */
    externalIds: Schema.Array(Schema.String)
  })
})
export type WebhookDeletedEvent = typeof WebhookDeletedEvent.Type

/** What a receiver may answer (optional): its own id for the post and a link to it. */
const ReceiverAnswer = Schema.Struct({
  id: Schema.optional(Schema.String),
  url: Schema.optional(Schema.NullOr(Schema.String))
})
const decodeAnswer = Schema.decodeUnknownOption(Schema.parseJson(ReceiverAnswer))

// Links, not bytes: the receiver fetches what it wants.
const webhookMedia = (medium: PublishMedia): WebhookMedia => ({
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
})

const webhookPart = (part: PublishPart) => ({ text: part.text, media: part.media.map(webhookMedia) })

const isHttpUrl = (text: string) => URL.canParse(text) && ["https:", "http:"].includes(new URL(text).protocol)

/** The same for every attempt at one publish, as Standard Webhooks wants, and always a valid header value. */
const messageId = (idempotencyKey: string) =>
  `msg_${createHash("sha256").update(idempotencyKey).digest("base64url").slice(0, 27)}`

// None: Rules.ts's, which GET /v1/providers answers.
const defaultLimits: ContentLimits = defaultContentLimits.webhook

/**
 * A team's own endpoint. There is nothing to log in to: `verify` checks that the address may be called,
 * without calling it, since the receiver cannot know the signing secret before it is shown. A 2xx answer
 * means published; 401 and 403 mean the receiver refused the signature (`auth`), 429 `rate_limited`,
 * 408, 5xx and timeouts `transient`, any other 4xx `invalid_content`.
 */
export class Webhook extends Effect.Service<Webhook>()("Webhook", {
  effect: Effect.gen(function*() {
    const outbound = yield* Outbound

    /** One signed call of the receiver: its answer when 2xx, else what the status means. */
    const deliver = (account: SocialAccountOf<"webhook">, id: string, body: string, now: Date) =>
      Effect.gen(function*() {
        const request = signedWebhookRequest(Redacted.value(account.credentials.signingSecret), id, body, now)
        const response = yield* outbound.request(account.credentials.url, request)
          .pipe(Effect.mapError((error) => fromOutbound("webhook", error)))
        if (response.status >= 200 && response.status <= 299) return response
        return yield* fromStatus({
          provider: "webhook",
          status: response.status,
          header: (name) => response.headers.get(name),
          providerMessage: `The receiver answered ${response.status} ${response.statusText}`.trim(),
          clientError: "invalid_content"
        })
      })

    const provider: SocialProvider<"webhook"> = {
      name: "webhook",
      defaultLimits,
      threads: "whole",
      verify: (credentials) =>
        outbound.check(credentials.url).pipe(
          Effect.mapError((error) => fromOutbound("webhook", error)),
          Effect.as({
            networkUserId: null,
            handle: new URL(credentials.url).host,
            displayName: credentials.name ?? null,
            avatarUrl: null,
            profileUrl: null,
            limits: defaultLimits
          })
        ),
      publish: (account, post) =>
        Effect.gen(function*() {
          const now = new Date()
          const id = messageId(post.idempotencyKey)
          const event: WebhookEvent = {
            type: "post.published",
            timestamp: now.toISOString(),
            data: {
              postId: post.postId,
              socialAccountId: account.id,
              text: post.text,
              idempotencyKey: post.idempotencyKey,
              media: post.media.map(webhookMedia),
              thread: (post.rest?.thread ?? []).map(webhookPart),
              firstComment: post.rest?.firstComment ? webhookPart(post.rest.firstComment) : null
            }
          }
          const response = yield* deliver(account, id, JSON.stringify(event), now)
          // Most receivers answer nothing: there is then nothing to decode (a failed parse costs an exception).
          const answer = response.body.byteLength === 0 ? Option.none() : decodeAnswer(new TextDecoder().decode(response.body))
          const receiverId = answer._tag === "Some" ? answer.value.id : undefined
          const url = answer._tag === "Some" ? answer.value.url : undefined
          return { externalId: receiverId ?? id, url: url && isHttpUrl(url) ? url : null }
        }),
      remove: (account, request) =>
        Effect.suspend(() => {
          const now = new Date()
          const event: WebhookDeletedEvent = {
            type: "post.deleted",
            timestamp: now.toISOString(),
            data: {
              postId: request.postId,
              socialAccountId: account.id,
              idempotencyKey: request.idempotencyKey,
              externalIds: [...new Set(request.parts.map((part) => part.externalId))]
            }
          }
          return deliver(account, messageId(request.idempotencyKey), JSON.stringify(event), now)
        }).pipe(Effect.asVoid),
      validate: (text, limits = defaultLimits) => lengthProblems(text, graphemeLength(text), limits),
      // The receiver is given links, whatever their size, count or type: nothing to refuse.
      validateMedia: () => [],
      // A receiver answers a publish, not questions about it afterwards: no analytics.
      analytics: null
    }
    return provider
  })
}) {}
