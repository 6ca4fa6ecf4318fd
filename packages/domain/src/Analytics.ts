import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ServiceUnavailable } from "./Errors.js"
import { integer, invalidUnless, optional, strict, Timestamp } from "./Fields.js"
import { PostId, SocialAccountId, TeamId } from "./Ids.js"
import { instantArbitrary, instantWithOffsetPattern, isInstantWithOffset } from "./Instants.js"
import { Estimate, IdempotencyKey } from "./Publishing.js"
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
  series: Schema.Array(EngagementSnapshot).annotations({
    description: "The newest snapshots (limit) taken before `before`, oldest first"
  })
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
  series: Schema.Array(AccountSnapshot).annotations({
    description: "The newest snapshots (limit) taken before `before`, oldest first: one a day, and each refresh"
  })
}).annotations({ identifier: "AccountAnalytics" })
export type AccountAnalytics = typeof AccountAnalytics.Type

/** How many snapshots a series holds by default, and at most. */
export const AnalyticsSeriesDefault = 100
export const AnalyticsSeriesMax = 1000

const seriesLimitDescription =
  `How many of the newest snapshots each series holds, from 1 to ${AnalyticsSeriesMax}; default ${AnalyticsSeriesDefault}`

/** Which snapshots a series holds: the newest `limit` taken before `before`. */
export const AnalyticsSeriesQuery = Schema.Struct({
  limit: optional(
    Schema.compose(
      // Exactly 1 to 1000 (no leading zeros), so that the document says the bound the server keeps.
      Schema.String.pipe(Schema.pattern(/^(?:[1-9][0-9]{0,2}|1000)$/)).annotations({ description: seriesLimitDescription }),
      Schema.NumberFromString
    ).pipe(Schema.between(1, AnalyticsSeriesMax)).annotations({
      ...invalidUnless(`must be a whole number from 1 to ${AnalyticsSeriesMax}`),
      arbitrary: () => (fc) => fc.integer({ min: 1, max: AnalyticsSeriesMax }),
      description: seriesLimitDescription
    })
  ),
  before: optional(
    Schema.String.pipe(Schema.filter(isInstantWithOffset, { jsonSchema: { pattern: instantWithOffsetPattern } })).annotations({
      arbitrary: () => instantArbitrary(new Date(Date.UTC(2000, 0, 1)), new Date(Date.UTC(9998, 0, 1))),
      description: "Only snapshots taken before this ISO 8601 instant with an offset (the page before a series' oldest takenAt)",
      ...invalidUnless("must be an ISO 8601 instant with an offset, e.g. 2027-01-31T09:00:00+01:00")
    })
  )
}).annotations(strict)
export type AnalyticsSeriesQuery = typeof AnalyticsSeriesQuery.Type

const postPath = Schema.Struct({ teamId: TeamId, postId: PostId })
const accountPath = Schema.Struct({ teamId: TeamId, socialAccountId: SocialAccountId })
const idempotent = Schema.Struct({ "idempotency-key": optional(IdempotencyKey) })

const refreshDescription = (what: string) =>
  `Reads ${what} from the provider now and stores it as a snapshot. Costs credits per account read (see the ` +
  "estimate; 402 `insufficient_credits` when the organization's available credits are short, `spend_cap_reached` " +
  "past the month's spend cap, nothing read); webhook accounts have no analytics and cost nothing. A provider that " +
  "refuses the read gives 409 `analytics_read_refused` (e.g. the account needs reconnecting), one that cannot answer " +
  "now 503, an account over its provider's call budget 429: nothing is charged or stored then. Send an " +
  "Idempotency-Key so that a retry replays the answer instead of paying twice (the same key with another request: " +
  "400 `idempotency_key_reused`; while the first still runs: 409 `idempotency_key_in_progress`)."

export class AnalyticsGroup extends HttpApiGroup.make("analytics")
  .add(
    HttpApiEndpoint.get("getPostAnalytics", "/v1/teams/:teamId/posts/:postId/analytics")
      .setPath(postPath)
      .setUrlParams(AnalyticsSeriesQuery)
      .addSuccess(PostAnalytics)
      .annotate(OpenApi.Summary, "Get post analytics")
      .annotate(OpenApi.Description, "The stored snapshots of the post's engagement per account: the latest, and a window of the series " +
        "(limit, before). Free.")
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
      .setUrlParams(AnalyticsSeriesQuery)
      .addSuccess(AccountAnalytics)
      .annotate(OpenApi.Summary, "Get account analytics")
      .annotate(OpenApi.Description, "The account's follower, following and post counts over time, from a daily snapshot: the latest, and a " +
        "window of the series (limit, before). Free.")
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
