import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { integer, invalidUnless, oneOf, optional, strict, Timestamp, visibleText } from "./Fields.js"
import { AltText } from "./Assets.js"
import { ApiKeyId, AssetId, PostId, SocialAccountId, TeamId, UserId, Uuid } from "./Ids.js"
import { instantArbitrary, instantWithOffsetPattern, isInstantWithOffset } from "./Instants.js"
import { ListEnvelope, listQueryFieldsSortedBy } from "./Lists.js"
import { ProviderErrorCategory, SocialProvider } from "./SocialAccounts.js"

export const maxPostLength = 10_000
export const maxTargetsPerPublish = 50
/** More than any provider takes (Bluesky and Mastodon: 4); a provider's own limit is checked before sending. */
export const maxMediaPerPost = 10

export const PostContent = visibleText({
  // \s is what String.prototype.trim removes: a post of these alone is blank.
  blankRanges: "\\s",
  minLength: 1,
  maxLength: maxPostLength
}).annotations({
  identifier: "PostContent",
  description: `The text, 1 to ${maxPostLength} characters, not blank; each provider's own limit applies when it is published`,
  ...invalidUnless(`must be 1 to ${maxPostLength} characters, not blank`)
})

/** Distinct account ids, from `min` to 50 of them. */
const accountIds = (min: number, description: string) =>
  Schema.Array(SocialAccountId).pipe(
    Schema.filter(
      (ids) => ids.length >= min && ids.length <= maxTargetsPerPublish && new Set(ids).size === ids.length,
      { jsonSchema: { minItems: min, maxItems: maxTargetsPerPublish, uniqueItems: true } }
    )
  ).annotations({
    description,
    ...invalidUnless(`must be ${min} to ${maxTargetsPerPublish} distinct social account ids`)
  })

export const PostStatus = oneOf("draft", "scheduled", "publishing", "published", "partially_published", "failed").annotations({
  identifier: "PostStatus",
  description: "draft until published; scheduled while it waits for its time; then publishing while targets are " +
    "pending, and published, partially_published or failed as its targets turned out"
})
export type PostStatus = typeof PostStatus.Type

export const TargetStatus = oneOf("pending", "published", "failed").annotations({ identifier: "TargetStatus" })
export type TargetStatus = typeof TargetStatus.Type

export const PublishError = Schema.Struct({
  category: ProviderErrorCategory,
  message: Schema.String,
  retryable: Schema.Boolean.annotations({ description: "Whether a later attempt may succeed" })
}).annotations({ identifier: "PublishError" })
export type PublishError = typeof PublishError.Type

export const PostTarget = Schema.Struct({
  socialAccountId: SocialAccountId,
  status: TargetStatus,
  externalId: Schema.NullOr(Schema.String).annotations({ description: "The provider's id of the published post" }),
  url: Schema.NullOr(Schema.String),
  publishedAt: Schema.NullOr(Timestamp),
  error: Schema.NullOr(PublishError),
  creditsSpent: integer("Credits this account's publish spent")
}).annotations({ identifier: "PostTarget", description: "What became of the post on one account" })
export type PostTarget = typeof PostTarget.Type

export const PostAuthor = Schema.Struct({
  userId: Schema.NullOr(UserId),
  apiKeyId: Schema.NullOr(ApiKeyId)
}).annotations({ identifier: "PostAuthor", description: "Who created the post: a user, or an API key" })

export const PostMedium = Schema.Struct({
  assetId: AssetId,
  altText: Schema.NullOr(Schema.String).annotations({
    description: "The post's own alt text for it; null: the asset's alt text is sent"
  })
}).annotations({ identifier: "PostMedium", description: "An asset of the team sent with the post, in order" })
export type PostMedium = typeof PostMedium.Type

const PostMediumInput = Schema.Struct({
  assetId: AssetId,
  altText: optional(Schema.NullOr(AltText).annotations({ description: "Overrides the asset's alt text for this post" }))
}).annotations({ ...strict, identifier: "PostMediumInput" })

const media = optional(
  Schema.Array(PostMediumInput).pipe(
    Schema.filter((items) => items.length <= maxMediaPerPost, { jsonSchema: { maxItems: maxMediaPerPost } })
  ).annotations({
    description: `Images and videos of the team's library to send with it, in order: at most ${maxMediaPerPost}, each ` +
      "once; each provider's own limits (Bluesky: 4 images; Mastodon: the instance's) are checked before sending",
    ...invalidUnless(`must be at most ${maxMediaPerPost} media, each { assetId, altText? }`)
  })
)

export const Post = Schema.Struct({
  id: PostId,
  teamId: TeamId,
  content: Schema.String,
  status: PostStatus,
  socialAccountIds: Schema.Array(SocialAccountId).annotations({ description: "The accounts it is meant for" }),
  targets: Schema.Array(PostTarget).annotations({ description: "One per account it was sent to, oldest first" }),
  scheduledAt: Schema.NullOr(Timestamp).annotations({ description: "When it is to be published; null unless scheduled" }),
  waitingUntil: Schema.NullOr(Timestamp).annotations({
    description: "When its accounts held back by their provider's rate budget will be sent (within a few seconds); " +
      "null unless it is scheduled or publishing and waits for an account's budget"
  }),
  linkTracking: Schema.NullOr(Schema.Boolean).annotations({
    description: "Whether its links are tracked: the post's own choice, or null for the team's linkTrackingDefault"
  }),
  media: Schema.Array(PostMedium),
  createdBy: PostAuthor,
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotations({ identifier: "Post" })
export type Post = typeof Post.Type

const linkTracking = optional(Schema.NullOr(Schema.Boolean).annotations({
  description: "Track the post's links (true), leave them as written (false), or follow the team (null, the default)",
  ...invalidUnless("must be true, false or null")
}))

export const CreatePost = Schema.Struct({
  content: PostContent,
  linkTracking,
  socialAccountIds: optional(accountIds(0, "The accounts it is meant for: accounts of the team")),
  media
}).annotations({ ...strict, identifier: "CreatePost" })
export type CreatePost = typeof CreatePost.Type

export const UpdatePost = Schema.Struct({
  content: optional(PostContent),
  linkTracking,
  socialAccountIds: optional(accountIds(0, "The accounts it is meant for: accounts of the team")),
  media
}).annotations({ ...strict, identifier: "UpdatePost" })
export type UpdatePost = typeof UpdatePost.Type

export const PostSortField = oneOf("createdAt", "updatedAt", "scheduledAt").annotations({
  identifier: "PostSortField",
  description: "Field to sort by; default createdAt. By scheduledAt, posts that are not scheduled come last"
})

export const PostListQuery = Schema.Struct({
  status: optional(PostStatus),
  socialAccountId: optional(SocialAccountId.annotations({ description: "Posts meant for, or sent to, this account" })),
  ...listQueryFieldsSortedBy(PostSortField)
}).annotations(strict)
export type PostListQuery = typeof PostListQuery.Type

export const PostList = ListEnvelope(Post, "PostList")

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
  creditsSpent: integer("Credits this publish spent: its price when published, else 0")
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
    credits: integer("0 for an account that would fail before anything is sent")
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

export const AttemptOutcome = oneOf("pending", "published", "failed", "in_doubt").annotations({
  identifier: "AttemptOutcome",
  description: "pending: sent, its answer not yet recorded (under way, or it timed out and waits for the recovery); " +
    "published; failed: the provider refused or could not be reached; in_doubt: it ended without an answer (its " +
    "send timed out or its server process stopped), so it may have been published: a later attempt with the same " +
    "provider key tells"
})
export type AttemptOutcome = typeof AttemptOutcome.Type

export const PublishAttempt = Schema.Struct({
  id: Uuid.annotations({ identifier: "PublishAttemptId", description: "Publish attempt UUID" }),
  socialAccountId: SocialAccountId,
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

const idempotent = Schema.Struct({ "idempotency-key": optional(IdempotencyKey) })

const teamPath = Schema.Struct({ teamId: TeamId })
const postPath = Schema.Struct({ teamId: TeamId, postId: PostId })

export class PostsGroup extends HttpApiGroup.make("posts")
  .add(
    HttpApiEndpoint.get("listPosts", "/v1/teams/:teamId/posts")
      .setPath(teamPath)
      .setUrlParams(PostListQuery)
      .addSuccess(PostList)
      .annotate(OpenApi.Summary, "List posts")
      .annotate(OpenApi.Description, "The team's posts; filters: status, socialAccountId.")
  )
  .add(
    HttpApiEndpoint.post("createPost", "/v1/teams/:teamId/posts")
      .setPath(teamPath)
      .setPayload(CreatePost)
      .addSuccess(Post, { status: 201 })
      .annotate(OpenApi.Summary, "Create draft")
      .annotate(OpenApi.Description, "A draft post, meant for accounts of the team (404 naming any other).")
  )
  .add(
    HttpApiEndpoint.get("getPost", "/v1/teams/:teamId/posts/:postId")
      .setPath(postPath)
      .addSuccess(Post)
      .annotate(OpenApi.Summary, "Get post")
      .annotate(OpenApi.Description, "One post of the team, with what became of it on each account.")
  )
  .add(
    HttpApiEndpoint.patch("updatePost", "/v1/teams/:teamId/posts/:postId")
      .setPath(postPath)
      .setPayload(UpdatePost)
      .addSuccess(Post)
      .annotate(OpenApi.Summary, "Update draft")
      .annotate(OpenApi.Description, "Changes a draft; a post that was sent gives 409.")
  )
  .add(
    HttpApiEndpoint.del("deletePost", "/v1/teams/:teamId/posts/:postId")
      .setPath(postPath)
      .addSuccess(Post)
      .annotate(OpenApi.Summary, "Delete draft")
      .annotate(OpenApi.Description, "Deletes a draft and answers it; a post that was sent gives 409.")
  )
  .add(
    HttpApiEndpoint.post("postNow", "/v1/teams/:teamId/posts/:postId/post-now")
      .setPath(postPath)
      .setHeaders(idempotent)
      .setPayload(TargetAccounts)
      .addSuccess(PostNowResponse)
      .annotate(OpenApi.Summary, "Publish now")
      .annotate(
        OpenApi.Description,
        "Publishes the post to the accounts now, concurrently, and answers one result per account, in the order of " +
          "the request, with an outcome. Before anything is sent: each text is checked by its provider (a problem " +
          "fails that account with invalid_content), an account that needs reconnecting fails with auth, and the " +
          "cost of the rest is reserved from the organization's credits (402 if short, nothing sent). An account " +
          "the post was already published to, or is being published to, gives 409 and nothing is sent. Retry the " +
          "failed accounts with a new request. Send an Idempotency-Key so that a retry after a timeout replays this " +
          "answer instead of publishing twice."
      )
  )
  .add(
    HttpApiEndpoint.post("schedulePost", "/v1/teams/:teamId/posts/:postId/schedule")
      .setPath(postPath)
      .setHeaders(idempotent)
      .setPayload(ScheduleRequest)
      .addSuccess(ScheduleResponse)
      .annotate(OpenApi.Summary, "Schedule")
      .annotate(
        OpenApi.Description,
        "Publishes the post to the accounts at `scheduledAt`, or in the team's next free posting slot. The same checks " +
          "as publishing now run at once (an account fails here for invalid_content or auth) and the credits of the " +
          "rest are held (402 if short, nothing scheduled). The post becomes scheduled; each account's result " +
          "appears on the post when it is published, transient failures retried with backoff. Scheduling a " +
          "scheduled post moves it: it is published once, at the new time. Send an Idempotency-Key as for post-now."
      )
  )
  .add(
    HttpApiEndpoint.post("unschedulePost", "/v1/teams/:teamId/posts/:postId/unschedule")
      .setPath(postPath)
      .addSuccess(Post)
      .annotate(OpenApi.Summary, "Unschedule")
      .annotate(
        OpenApi.Description,
        "Returns a scheduled post to draft and releases its credits; once its publishing has begun, 409."
      )
  )
  .add(
    HttpApiEndpoint.post("estimatePost", "/v1/teams/:teamId/posts/:postId/estimate")
      .setPath(postPath)
      .setPayload(TargetAccounts)
      .addSuccess(Estimate)
      .annotate(OpenApi.Summary, "Estimate cost")
      .annotate(
        OpenApi.Description,
        "What publishing the post to these accounts now would cost, per account, and whether the organization's " +
          "available credits cover it. Changes nothing: show it before asking for confirmation."
      )
  )
  .add(
    HttpApiEndpoint.get("listPublishAttempts", "/v1/teams/:teamId/posts/:postId/attempts")
      .setPath(postPath)
      .setUrlParams(PublishAttemptListQuery)
      .addSuccess(PublishAttemptList)
      .annotate(OpenApi.Summary, "List publish attempts")
      .annotate(
        OpenApi.Description,
        "Every call Postline made to a provider to publish this post, newest first by default: when, to which " +
          "account, how it ended (outcome and category) and a short summary of the provider's answer. Filter: " +
          "socialAccountId. Anyone who may read the post may list them."
      )
  )
  .annotate(OpenApi.Title, "posts")
  .annotate(OpenApi.Description, "Posts of a team: drafts, and publishing them to the team's social accounts")
{}

/** The answer's header when an Idempotency-Key replays a stored answer. */
export const replayedHeader = "idempotent-replayed"
