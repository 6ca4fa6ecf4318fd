import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { integer, invalidUnless, oneOf, optional, strict, Timestamp } from "./Fields.js"
import { ApiKeyId, PostId, SocialAccountId, TeamId, UserId } from "./Ids.js"
import { ListEnvelope, listQueryFieldsSortedBy } from "./Lists.js"
import {
  Estimate,
  IdempotencyKey,
  PostNowResponse,
  PublishAttemptList,
  PublishAttemptListQuery,
  PublishError,
  ScheduleRequest,
  ScheduleResponse,
  TargetAccounts,
  UnpublishRequest,
  UnpublishResponse
} from "./Publishing.js"
import {
  FirstCommentInput,
  FirstCommentResult,
  MediaInput,
  PostContent,
  PostMedium,
  PostPart,
  PostVersion,
  PublishedPart,
  ThreadInput,
  VersionsInput
} from "./PostParts.js"
import { accountIds } from "./TargetAccountIds.js"

export const PostStatus = oneOf(
  "draft",
  "scheduled",
  "publishing",
  "published",
  "partially_published",
  "failed",
  "deleted"
).annotations({
  identifier: "PostStatus",
  description: "draft until published; scheduled while it waits for its time; then publishing while targets are " +
    "pending, and published, partially_published or failed as its targets turned out; deleted once every account " +
    "it was published to has taken it down (unpublish)"
})
export type PostStatus = typeof PostStatus.Type

export const TargetStatus = oneOf("pending", "published", "failed", "deleting", "deleted").annotations({
  identifier: "TargetStatus",
  description: "pending while it is sent (or waits for its time); published or failed as it turned out; deleting " +
    "while it is taken down from the account, and deleted once it is"
})
export type TargetStatus = typeof TargetStatus.Type

export const PostTarget = Schema.Struct({
  socialAccountId: SocialAccountId,
  status: TargetStatus,
  externalId: Schema.NullOr(Schema.String).annotations({ description: "The provider's id of the published post" }),
  url: Schema.NullOr(Schema.String),
  publishedAt: Schema.NullOr(Timestamp),
  error: Schema.NullOr(PublishError),
  creditsSpent: integer("Credits this account's publish spent"),
  parts: Schema.Array(PublishedPart).annotations({
    description: "Each part that went out to the account, in order: one for a post, one per part for a thread"
  }),
  firstComment: Schema.NullOr(FirstCommentResult).annotations({ description: "null until a first comment was sent" }),
  deletedAt: Schema.NullOr(Timestamp).annotations({ description: "When it was taken down from the account" })
}).annotations({ identifier: "PostTarget", description: "What became of the post on one account" })
export type PostTarget = typeof PostTarget.Type

export const PostAuthor = Schema.Struct({
  userId: Schema.NullOr(UserId),
  apiKeyId: Schema.NullOr(ApiKeyId)
}).annotations({ identifier: "PostAuthor", description: "Who created the post: a user, or an API key" })

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
  thread: Schema.Array(PostPart).annotations({ description: "The parts after the first, in order: empty unless a thread" }),
  firstComment: Schema.NullOr(PostPart),
  versions: Schema.Array(PostVersion).annotations({ description: "Versions for single accounts" }),
  createdBy: PostAuthor,
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotations({ identifier: "Post" })
export type Post = typeof Post.Type

const linkTracking = optional(Schema.NullOr(Schema.Boolean).annotations({
  description: "Track the post's links (true), leave them as written (false), or follow the team (null, the default)",
  ...invalidUnless("must be true, false or null")
}))

const body = {
  media: optional(MediaInput),
  thread: optional(ThreadInput),
  firstComment: optional(FirstCommentInput),
  versions: optional(VersionsInput)
}

export const CreatePost = Schema.Struct({
  content: PostContent,
  linkTracking,
  socialAccountIds: optional(accountIds(0, "The accounts it is meant for: accounts of the team")),
  ...body
}).annotations({ ...strict, identifier: "CreatePost" })
export type CreatePost = typeof CreatePost.Type

export const UpdatePost = Schema.Struct({
  content: optional(PostContent),
  linkTracking,
  socialAccountIds: optional(accountIds(0, "The accounts it is meant for: accounts of the team")),
  ...body
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
      .annotate(
        OpenApi.Description,
        "A draft post, meant for accounts of the team (404 naming any other); an asset given twice in media gives 400 " +
          "`duplicate_media`."
      )
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
      .annotate(
        OpenApi.Description,
        "Changes a draft; a post that is not a draft gives 409 `post_not_draft`, an asset given twice in media 400 " +
          "`duplicate_media`."
      )
  )
  .add(
    HttpApiEndpoint.del("deletePost", "/v1/teams/:teamId/posts/:postId")
      .setPath(postPath)
      .addSuccess(Post)
      .annotate(OpenApi.Summary, "Delete draft")
      .annotate(OpenApi.Description, "Deletes a draft and answers it; a post that is not a draft gives 409 `post_not_draft`.")
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
          "cost of the rest is reserved from the organization's credits (402 `insufficient_credits` if short, " +
          "`spend_cap_reached` past the month's spend cap, nothing sent). An account the post was already published " +
          "to gives 409 `already_published`, one it is being published to 409 `post_publishing`, one it was taken down " +
          "from 409 `post_deleted`, a scheduled post 409 `post_scheduled`, and nothing is sent. Retry the failed accounts with a new request. Send an " +
          "Idempotency-Key so that a retry after a timeout replays this answer instead of publishing twice (the same " +
          "key with another request: 400 `idempotency_key_reused`; while the first still runs: 409 " +
          "`idempotency_key_in_progress`)."
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
          "rest are held (402 `insufficient_credits` or `spend_cap_reached` if not, nothing scheduled). The post " +
          "becomes scheduled; each account's result appears on the post when it is published, transient failures " +
          "retried with backoff. Scheduling a scheduled post moves it: it is published once, at the new time. A post " +
          "being published gives 409 `post_publishing`, one already published to an account 409 `already_published` (taken " +
          "down from it: `post_deleted`); " +
          "`scheduledAt` too soon or over a year ahead 400 `scheduled_at_out_of_range`, no `scheduledAt` and no " +
          "posting slots 400 `no_posting_slots`. Send an Idempotency-Key as for post-now."
      )
  )
  .add(
    HttpApiEndpoint.post("unschedulePost", "/v1/teams/:teamId/posts/:postId/unschedule")
      .setPath(postPath)
      .addSuccess(Post)
      .annotate(OpenApi.Summary, "Unschedule")
      .annotate(
        OpenApi.Description,
        "Returns a scheduled post to draft and releases its credits; once its publishing has begun, 409 " +
          "`post_publishing`; a post that is not scheduled, 409 `post_not_scheduled`."
      )
  )
  .add(
    HttpApiEndpoint.post("unpublishPost", "/v1/teams/:teamId/posts/:postId/unpublish")
      .setPath(postPath)
      .setHeaders(idempotent)
      .setPayload(UnpublishRequest)
      .addSuccess(UnpublishResponse)
      .annotate(OpenApi.Summary, "Delete from the networks")
      .annotate(
        OpenApi.Description,
        "Takes the published post down from the accounts (all it was published to, unless some are named): every " +
          "part of a thread and its first comment (Bluesky deletes the records, Mastodon the statuses, a webhook " +
          "gets a signed post.deleted event), and answers one result per account. Each account's target is " +
          "deleting while it runs and deleted once the network took it down; the post is deleted when all are, " +
          "and the organization's event webhook gets post.deleted per account. An account the post is not " +
          "published to (failed, or already taken down) gives 409 `post_not_published`, one it is still being sent to " +
          "409 `post_publishing`, one being taken down 409 `post_deleting`, a scheduled post 409 `post_scheduled`, and " +
          "nothing is deleted. " +
          "Credits spent on publishing are not given back. Send an Idempotency-Key as for post-now."
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
