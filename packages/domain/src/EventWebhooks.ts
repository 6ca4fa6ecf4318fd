import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { httpUrlShape, integer, invalidUnless, maxUrlLength, optional, strict, Timestamp, WebsiteUrl } from "./Fields.js"
import { OrganizationId, PostId, SocialAccountId, TeamId } from "./Ids.js"
import { OrganizationPath } from "./Organizations.js"
import { PublishError } from "./Publishing.js"
import { SocialProvider } from "./SocialAccounts.js"

/** The events an organization's event webhook receives. */
export const eventTypes = ["post.published", "post.failed", "post.deleted"] as const

export const EventType = Schema.Literal(...eventTypes).annotations({
  identifier: "EventType",
  description: "post.published: a post reached an account; post.failed: it failed there for good, or until it is " +
    "published again (see error.retryable); post.deleted: it was taken down from an account (unpublish)"
})
export type EventType = typeof EventType.Type

// As a social account's address: no user name or password, which an HTTP client would not send.
const addressShape = httpUrlShape({ userInfo: false })

export const EventWebhookUrl = WebsiteUrl.pipe(
  Schema.filter((url) => addressShape.test(url), { jsonSchema: { pattern: addressShape.source, maxLength: maxUrlLength } })
).annotations({
  identifier: "EventWebhookUrl",
  description: `Where each event is POSTed: an absolute https URL of at most ${maxUrlLength} characters with no user ` +
    "name or password, on the public internet (http and private addresses only where the server's operator allows " +
    "them with OUTBOUND_ALLOW_PRIVATE)",
  ...invalidUnless(`must be an absolute http or https URL of at most ${maxUrlLength} characters, without a user name or password`)
})

export const EventWebhookError = Schema.Struct({
  message: Schema.String,
  at: Timestamp
}).annotations({
  identifier: "EventWebhookError",
  description: "The last delivery that failed, and why; null again once a delivery goes through"
})

export const EventWebhook = Schema.Struct({
  organizationId: OrganizationId,
  url: Schema.String.annotations({ description: "Where events are POSTed" }),
  events: Schema.Array(EventType).annotations({ description: "The events it receives: all of them" }),
  secretCreatedAt: Timestamp.annotations({ description: "When its signing secret was made: at creation, or at the last rotation" }),
  pendingDeliveries: integer("Events waiting to be delivered, or to be tried again"),
  lastDeliveredAt: Schema.NullOr(Timestamp).annotations({ description: "When the receiver last accepted an event (2xx)" }),
  lastError: Schema.NullOr(EventWebhookError),
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotations({
  identifier: "EventWebhook",
  description: "The organization's event webhook: one URL told of every post's end on every account of its teams, " +
    "signed by the Standard Webhooks scheme with a secret shown only when it is made"
})
export type EventWebhook = typeof EventWebhook.Type

/** The answer to setting the webhook: the only time its signing secret is shown. */
export const SavedEventWebhook = Schema.Struct({
  ...EventWebhook.fields,
  signingSecret: Schema.NullOr(Schema.String).annotations({
    description: "The Standard Webhooks signing secret (`whsec_…`), shown this once: when the webhook is created or " +
      "its secret rotated; null otherwise (the secret is kept)"
  })
}).annotations({ identifier: "SavedEventWebhook" })
export type SavedEventWebhook = typeof SavedEventWebhook.Type

export const SetEventWebhook = Schema.Struct({
  url: EventWebhookUrl,
  rotateSecret: optional(Schema.Boolean.annotations({
    description: "Make a new signing secret (shown in the answer) in place of the current one; default false",
    ...invalidUnless("must be true or false")
  }))
}).annotations({ ...strict, identifier: "SetEventWebhook" })
export type SetEventWebhook = typeof SetEventWebhook.Type

/**
 * The body of each event (docs/webhooks.md): what became of a post on one account, once it is final for now.
 * Signed by the Standard Webhooks scheme in the `webhook-id`, `webhook-timestamp` and `webhook-signature` headers.
 */
export const PostEventData = Schema.Struct({
  organizationId: OrganizationId,
  teamId: TeamId,
  postId: PostId,
  socialAccountId: SocialAccountId,
  provider: Schema.NullOr(SocialProvider),
  status: Schema.Literal("published", "failed", "deleted"),
  externalId: Schema.NullOr(Schema.String),
  url: Schema.NullOr(Schema.String),
  publishedAt: Schema.NullOr(Timestamp),
  error: Schema.NullOr(PublishError),
  creditsSpent: integer("Credits the publish spent on this account"),
  deletedAt: Schema.NullOr(Timestamp).annotations({ description: "When it was taken down (post.deleted); else null" })
}).annotations({ identifier: "PostEventData" })
export type PostEventData = typeof PostEventData.Type

export const PostEvent = Schema.Struct({
  type: EventType,
  timestamp: Timestamp.annotations({ description: "When the target reached this state; the same on every delivery" }),
  data: PostEventData
}).annotations({ identifier: "PostEvent" })
export type PostEvent = typeof PostEvent.Type

export class EventWebhooksGroup extends HttpApiGroup.make("eventWebhooks")
  .add(
    HttpApiEndpoint.get("getEventWebhook", "/v1/organizations/:organizationId/event-webhook")
      .setPath(OrganizationPath)
      .addSuccess(EventWebhook)
      .annotate(OpenApi.Summary, "Get event webhook")
      .annotate(
        OpenApi.Description,
        "The organization's event webhook, never its secret, with how its deliveries stand; 404 when it has none. " +
          "Admins, owners and the organization's API keys may."
      )
  )
  .add(
    HttpApiEndpoint.put("setEventWebhook", "/v1/organizations/:organizationId/event-webhook")
      .setPath(OrganizationPath)
      .setPayload(SetEventWebhook)
      .addSuccess(SavedEventWebhook)
      .annotate(OpenApi.Summary, "Set event webhook")
      .annotate(
        OpenApi.Description,
        "Sets the URL told of each post's end on each account (post.published, post.failed), after checking that it " +
          "may be called (400 `url_not_callable` if not). Creating it, or rotateSecret: true, makes a signing secret, shown in this " +
          "answer only; otherwise the secret is kept. Events waiting are delivered to the new URL. Admins, owners and " +
          "the organization's API keys may."
      )
  )
  .add(
    HttpApiEndpoint.del("deleteEventWebhook", "/v1/organizations/:organizationId/event-webhook")
      .setPath(OrganizationPath)
      .addSuccess(EventWebhook)
      .annotate(OpenApi.Summary, "Delete event webhook")
      .annotate(
        OpenApi.Description,
        "Removes the event webhook and the events still waiting for it, and answers it; 404 when there is none."
      )
  )
  .annotate(OpenApi.Title, "eventWebhooks")
  .annotate(OpenApi.Description, "An organization's webhook for publishing events")
{}
