import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ServiceUnavailable } from "./Errors.js"
import { integer, optional, Timestamp } from "./Fields.js"
import { PostId, SocialAccountId, TeamId } from "./Ids.js"
import { Estimate, IdempotencyKey } from "./Posts.js"
import { SocialProvider } from "./SocialAccounts.js"

const count = (description: string) => Schema.NullOr(integer(description))

export const EngagementSnapshot = Schema.Struct({
  takenAt: Timestamp,
  likes: count("Likes (Bluesky) or favourites (Mastodon); null when the provider did not say"),
  reposts: count("Reposts (Bluesky) or reblogs (Mastodon); null when the provider did not say"),
  replies: count("Replies; null when the provider did not say"),
  quotes: count("Quotes; null when the provider did not say (Mastodon before 4.5)"),
  views: count("Views; null: neither Bluesky nor Mastodon counts them"),
  linkClicks: integer("Clicks on the post's tracked links so far, all its accounts together (a short link is per post)")
}).annotations({ identifier: "EngagementSnapshot", description: "A post's engagement on one account, as read at takenAt" })
export type EngagementSnapshot = typeof EngagementSnapshot.Type

export const TargetAnalytics = Schema.Struct({
  socialAccountId: SocialAccountId,
  provider: Schema.NullOr(SocialProvider).annotations({ description: "Null once the account was removed" }),
  externalId: Schema.String,
  latest: Schema.NullOr(EngagementSnapshot).annotations({ description: "The newest snapshot; null before the first read" }),
  series: Schema.Array(EngagementSnapshot).annotations({ description: "Every snapshot, oldest first" })
}).annotations({ identifier: "TargetAnalytics" })
export type TargetAnalytics = typeof TargetAnalytics.Type

export const PostAnalytics = Schema.Struct({
  postId: PostId,
  targets: Schema.Array(TargetAnalytics).annotations({ description: "One per account the post was published to" })
}).annotations({
  identifier: "PostAnalytics",
  description: "A published post's engagement per account. Snapshots are read about 15 minutes, 1 hour, 6 hours, " +
    "1, 3, 7 and 30 days after publishing, then never; a refresh reads now"
})
export type PostAnalytics = typeof PostAnalytics.Type

export const AccountSnapshot = Schema.Struct({
  takenAt: Timestamp,
  followers: count("Followers; null when the provider did not say"),
  following: count("Accounts it follows; null when the provider did not say"),
  posts: count("Posts (Mastodon: statuses); null when the provider did not say")
}).annotations({ identifier: "AccountSnapshot", description: "An account's counts, as read at takenAt" })
export type AccountSnapshot = typeof AccountSnapshot.Type

export const AccountAnalytics = Schema.Struct({
  socialAccountId: SocialAccountId,
  provider: SocialProvider,
  latest: Schema.NullOr(AccountSnapshot),
  series: Schema.Array(AccountSnapshot).annotations({ description: "Every snapshot, oldest first: one a day, and each refresh" })
}).annotations({ identifier: "AccountAnalytics" })
export type AccountAnalytics = typeof AccountAnalytics.Type

const postPath = Schema.Struct({ teamId: TeamId, postId: PostId })
const accountPath = Schema.Struct({ teamId: TeamId, socialAccountId: SocialAccountId })
const idempotent = Schema.Struct({ "idempotency-key": optional(IdempotencyKey) })

const refreshDescription = (what: string) =>
  `Reads ${what} from the provider now and stores it as a snapshot. Costs credits per account read (see the ` +
  "estimate; 402 when the organization's available credits are short, nothing read); webhook accounts have no " +
  "analytics and cost nothing. A provider that refuses the read gives 409 (e.g. the account needs reconnecting), one " +
  "that cannot answer now 503, an account over its provider's call budget 429: nothing is charged or stored then. " +
  "Send an Idempotency-Key so that a retry replays the answer instead of paying twice."

export class AnalyticsGroup extends HttpApiGroup.make("analytics")
  .add(
    HttpApiEndpoint.get("getPostAnalytics", "/v1/teams/:teamId/posts/:postId/analytics")
      .setPath(postPath)
      .addSuccess(PostAnalytics)
      .annotate(OpenApi.Summary, "Get post analytics")
      .annotate(OpenApi.Description, "The stored snapshots of the post's engagement per account: the latest and the series. Free.")
  )
  .add(
    HttpApiEndpoint.get("estimatePostAnalyticsRefresh", "/v1/teams/:teamId/posts/:postId/analytics/refresh/estimate")
      .setPath(postPath)
      .addSuccess(Estimate)
      .annotate(OpenApi.Summary, "Estimate post analytics refresh")
      .annotate(OpenApi.Description, "What refreshing the post's analytics now would cost, per account. Changes nothing.")
  )
  .add(
    HttpApiEndpoint.post("refreshPostAnalytics", "/v1/teams/:teamId/posts/:postId/analytics/refresh")
      .setPath(postPath)
      .setHeaders(idempotent)
      .addSuccess(PostAnalytics)
      .addError(ServiceUnavailable)
      .annotate(OpenApi.Summary, "Refresh post analytics")
      .annotate(OpenApi.Description, refreshDescription("the post's engagement on each account it was published to"))
  )
  .add(
    HttpApiEndpoint.get("getAccountAnalytics", "/v1/teams/:teamId/social-accounts/:socialAccountId/analytics")
      .setPath(accountPath)
      .addSuccess(AccountAnalytics)
      .annotate(OpenApi.Summary, "Get account analytics")
      .annotate(OpenApi.Description, "The account's follower, following and post counts over time, from a daily snapshot. Free.")
  )
  .add(
    HttpApiEndpoint.get(
      "estimateAccountAnalyticsRefresh",
      "/v1/teams/:teamId/social-accounts/:socialAccountId/analytics/refresh/estimate"
    )
      .setPath(accountPath)
      .addSuccess(Estimate)
      .annotate(OpenApi.Summary, "Estimate account analytics refresh")
      .annotate(OpenApi.Description, "What refreshing the account's counts now would cost. Changes nothing.")
  )
  .add(
    HttpApiEndpoint.post("refreshAccountAnalytics", "/v1/teams/:teamId/social-accounts/:socialAccountId/analytics/refresh")
      .setPath(accountPath)
      .setHeaders(idempotent)
      .addSuccess(AccountAnalytics)
      .addError(ServiceUnavailable)
      .annotate(OpenApi.Summary, "Refresh account analytics")
      .annotate(OpenApi.Description, refreshDescription("the account's counts"))
  )
  .annotate(OpenApi.Title, "analytics")
  .annotate(OpenApi.Description, "Engagement of published posts and counts of social accounts over time")
{}
