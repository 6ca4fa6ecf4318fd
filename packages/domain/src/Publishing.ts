import { Schema } from "effect"
import { integer, invalidUnless, oneOf, optional, strict, Timestamp } from "./Fields.js"
import { PostId, SocialAccountId, Uuid } from "./Ids.js"
import { instantArbitrary, instantWithOffsetPattern, isInstantWithOffset } from "./Instants.js"
import { ListEnvelope, listQueryFieldsSortedBy } from "./Lists.js"
import { FirstCommentResult, PublishedPart } from "./PostParts.js"
import { ProviderErrorCategory, SocialProvider } from "./SocialAccounts.js"
import { accountIds } from "./TargetAccountIds.js"

export const PublishError = Schema.Struct({
  category: ProviderErrorCategory,
  message: Schema.String,
  retryable: Schema.Boolean.annotations({ description: "Whether a later attempt may succeed" })
}).annotations({ identifier: "PublishError" })
export type PublishError = typeof PublishError.Type

export const TargetAccounts = Schema.Struct({
  socialAccountIds: accountIds(1, "The accounts to publish to, accounts of the post's team")
}).annotations({ ...strict, identifier: "TargetAccounts" })
export type TargetAccounts = typeof TargetAccounts.Type

export const PublishOutcome = oneOf("none_failed", "partially_failed", "all_failed").annotations({
  identifier: "PublishOutcome"
})
export type PublishOutcome = typeof PublishOutcome.Type

export const PublishResult = Schema.Struct({
  socialAccountId: SocialAccountId,
  status: oneOf("published", "failed", "pending").annotations({
    description: "pending: the provider did not answer in time, so the post may have gone out; Postline sends it " +
      "again with the same provider key until it can tell (see the post's targets)"
  }),
  externalId: Schema.NullOr(Schema.String),
  url: Schema.NullOr(Schema.String),
  error: Schema.NullOr(PublishError),
  creditsSpent: integer("Credits this publish spent: its price when published, else 0"),
  parts: Schema.Array(PublishedPart).annotations({ description: "Each part that went out, in order" }),
  firstComment: Schema.NullOr(FirstCommentResult)
}).annotations({ identifier: "PublishResult" })
export type PublishResult = typeof PublishResult.Type

export const PostNowResponse = Schema.Struct({
  postId: PostId,
  results: Schema.Array(PublishResult).annotations({ description: "One per account, in the order of the request" }),
  outcome: PublishOutcome
}).annotations({ identifier: "PostNowResponse" })
export type PostNowResponse = typeof PostNowResponse.Type

export const Estimate = Schema.Struct({
  total: integer("Credits the publish would hold"),
  perAccount: Schema.Array(Schema.Struct({
    socialAccountId: SocialAccountId,
    credits: integer("0 for an account that would fail before anything is sent"),
    publishes: optional(integer(
      "A publish's estimate: what the account gets sent, one per part of the version it gets and one for a first comment"
    )),
    problems: optional(Schema.Array(Schema.String).annotations({
      description: "A publish's estimate: why the account would fail before anything is sent (a part too long, " +
        "media it refuses, an account to reconnect); empty when it would be sent"
    }))
  })),
  available: integer("The organization's available credits now"),
  sufficient: Schema.Boolean,
  howToGetCredits: Schema.optional(Schema.String.annotations({
    description: "When the available credits fall short: how the organization gets credits on this server (the " +
      "operator's admin command with billing off, a checkout with it on)"
  }))
}).annotations({
  identifier: "Estimate",
  description: "What publishing to these accounts would cost, and whether the organization has it: changes nothing"
})
export type Estimate = typeof Estimate.Type

export const UnpublishRequest = Schema.Struct({
  socialAccountIds: optional(accountIds(1, "The accounts to take the post down from; absent: every account it is published to"))
}).annotations({ ...strict, identifier: "UnpublishRequest" })
export type UnpublishRequest = typeof UnpublishRequest.Type

export const UnpublishResult = Schema.Struct({
  socialAccountId: SocialAccountId,
  status: oneOf("deleted", "failed", "deleting").annotations({
    description: "deleting: the network did not answer in time; Postline asks it again until it can tell"
  }),
  error: Schema.NullOr(PublishError)
}).annotations({ identifier: "UnpublishResult" })
export type UnpublishResult = typeof UnpublishResult.Type

export const UnpublishResponse = Schema.Struct({
  postId: PostId,
  results: Schema.Array(UnpublishResult).annotations({
    description: "One per account, in the order of the request, else of the post's targets"
  }),
  outcome: PublishOutcome
}).annotations({ identifier: "UnpublishResponse" })
export type UnpublishResponse = typeof UnpublishResponse.Type

export const minScheduleLeadSeconds = 10

export const ScheduleRequest = Schema.Union(
  Schema.Struct({
    socialAccountIds: accountIds(1, "The accounts to publish to, accounts of the post's team"),
    scheduledAt: Schema.String.pipe(
      Schema.filter(isInstantWithOffset, { jsonSchema: { pattern: instantWithOffsetPattern } })
    ).annotations({
      arbitrary: () => instantArbitrary(new Date(Date.UTC(1000, 0, 1)), new Date(Date.UTC(9998, 0, 1))),
      description: `When to publish: an ISO 8601 instant with an offset. It must also be at least ` +
        `${minScheduleLeadSeconds} seconds (SCHEDULE_MIN_LEAD_SECONDS) and at most one year ahead, which the pattern cannot say`,
      ...invalidUnless("must be an ISO 8601 instant with an offset, e.g. 2027-01-31T09:00:00+01:00")
    })
  }).annotations({ ...strict, identifier: "ScheduleAt" }),
  Schema.Struct({
    socialAccountIds: accountIds(1, "The accounts to publish to, accounts of the post's team"),
    slot: Schema.Literal("next").annotations({
      description: "The team's next posting slot that no scheduled post of the team holds"
    })
  }).annotations({ ...strict, identifier: "ScheduleInNextSlot" })
).annotations({ identifier: "ScheduleRequest" })
export type ScheduleRequest = typeof ScheduleRequest.Type

export const ScheduleResult = Schema.Struct({
  socialAccountId: SocialAccountId,
  status: oneOf("scheduled", "failed"),
  error: Schema.NullOr(PublishError)
}).annotations({ identifier: "ScheduleResult" })

export const ScheduleResponse = Schema.Struct({
  postId: PostId,
  scheduledAt: Timestamp,
  results: Schema.Array(ScheduleResult).annotations({ description: "One per account, in the order of the request" }),
  outcome: PublishOutcome
}).annotations({ identifier: "ScheduleResponse" })
export type ScheduleResponse = typeof ScheduleResponse.Type

/** The most of a provider's answer an attempt keeps, in characters. */
export const maxAttemptSummaryLength = 500

export const AttemptOutcome = oneOf("pending", "published", "failed", "in_doubt", "deleted").annotations({
  identifier: "AttemptOutcome",
  description: "pending: sent, its answer not yet recorded (under way, or it timed out and waits for the recovery); " +
    "published; failed: the provider refused or could not be reached; in_doubt: it ended without an answer (its " +
    "send timed out or its server process stopped), so it may have been published (or, for a delete, taken down): " +
    "a later attempt with the same provider key tells; deleted: a delete the provider carried out"
})
export type AttemptOutcome = typeof AttemptOutcome.Type

export const PublishAttempt = Schema.Struct({
  id: Uuid.annotations({ identifier: "PublishAttemptId", description: "Publish attempt UUID" }),
  socialAccountId: SocialAccountId,
  kind: oneOf("publish", "delete").annotations({ description: "A publish, or taking the post down (unpublish)" }),
  provider: Schema.NullOr(SocialProvider).annotations({
    description: "The account's provider when the attempt was made; null for attempts recorded before this was kept, " +
      "whose account has since been removed"
  }),
  attempt: integer("Which call of this account's provider for this post it was: 1 for the first, counting every publish"),
  startedAt: Timestamp,
  finishedAt: Schema.NullOr(Timestamp).annotations({ description: "When its answer (or the lack of one) was recorded" }),
  outcome: AttemptOutcome,
  category: Schema.NullOr(ProviderErrorCategory).annotations({ description: "Why it failed; null unless it failed" }),
  externalId: Schema.NullOr(Schema.String).annotations({ description: "The provider's id of the post, when published" }),
  summary: Schema.NullOr(Schema.String).annotations({
    description: `What the provider answered, in at most ${maxAttemptSummaryLength} characters (its HTTP status and ` +
      "words, or where it published the post), never credentials; null while pending"
  })
}).annotations({
  identifier: "PublishAttempt",
  description: "One call of a provider to publish a post to an account, recorded before it is made and when it answers"
})
export type PublishAttempt = typeof PublishAttempt.Type

export const PublishAttemptSortField = oneOf("createdAt").annotations({
  identifier: "PublishAttemptSortField",
  description: "Attempts sort by when they started (startedAt); ties by id"
})

export const PublishAttemptListQuery = Schema.Struct({
  socialAccountId: optional(SocialAccountId.annotations({ description: "Only the attempts at this account" })),
  ...listQueryFieldsSortedBy(PublishAttemptSortField)
}).annotations(strict)
export type PublishAttemptListQuery = typeof PublishAttemptListQuery.Type

export const PublishAttemptList = ListEnvelope(PublishAttempt, "PublishAttemptList")

export const IdempotencyKey = Schema.String.pipe(Schema.pattern(/^[\x20-\x7E]{1,255}$/)).annotations({
  identifier: "IdempotencyKey",
  description: "1 to 255 printable ASCII characters, e.g. a UUID. A retry with the same key and body gets the " +
    "first answer again, with `Idempotent-Replayed: true`, instead of publishing twice; kept 24 hours",
  ...invalidUnless("must be 1 to 255 printable ASCII characters")
})

/** The answer's header when an Idempotency-Key replays a stored answer. */
export const replayedHeader = "idempotent-replayed"
