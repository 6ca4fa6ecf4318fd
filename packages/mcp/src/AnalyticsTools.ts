import {
  AccountAnalytics,
  AnalyticsSeriesDefault,
  AnalyticsSeriesMax,
  AnalyticsSeriesQuery,
  Estimate,
  integer,
  invalidUnless,
  optional,
  PostAnalytics,
  PostId,
  SocialAccountId,
  TeamId
} from "@postline/domain"
import { Schema } from "effect"
import { accountFields, apiTool, idempotencyKey, idempotentAnswer, postFields, reads } from "./ApiTool.js"

/** A series' window: as the API's query (AnalyticsSeriesQuery), with its size a JSON number, like PageSize. */
const SeriesSize = integer(
  `How many of the newest snapshots each series holds, 1 to ${AnalyticsSeriesMax}; default ${AnalyticsSeriesDefault}`
).pipe(
  Schema.filter((n) => n >= 1 && n <= AnalyticsSeriesMax, { jsonSchema: { minimum: 1, maximum: AnalyticsSeriesMax } })
).annotations({ identifier: "SeriesSize", ...invalidUnless(`must be a whole number from 1 to ${AnalyticsSeriesMax}`) })

const seriesWindow = { limit: optional(SeriesSize), before: AnalyticsSeriesQuery.fields.before }

export const GetPostAnalytics = apiTool("get_post_analytics", {
  title: "Get a post's analytics",
  description: "A published post's engagement on each account it was published to (likes, reposts, replies, " +
    "quotes, views, link clicks): the latest snapshot and a series of them, oldest first (limit, and before for " +
    "older ones). Free: snapshots are read on a schedule after publishing; refresh_post_analytics reads now, for " +
    "credits. Webhook accounts have no analytics (latest null). A draft has no targets.",
  parameters: { ...postFields, ...seriesWindow },
  success: PostAnalytics,
  hints: reads
})

export const GetAccountAnalytics = apiTool("get_account_analytics", {
  title: "Get an account's analytics",
  description: "A social account's follower, following and post counts over time, read daily: the latest snapshot " +
    "and a series, oldest first (limit, before). Free; refresh_account_analytics reads now, for credits.",
  parameters: { ...accountFields, ...seriesWindow },
  success: AccountAnalytics,
  hints: reads
})

export const EstimateAnalyticsRefresh = apiTool("estimate_analytics_refresh", {
  title: "Estimate an analytics refresh's cost",
  description: "What refreshing analytics now would cost in credits, per account, and whether the organization " +
    "has enough (sufficient): of a post (postId) or of an account (socialAccountId), give exactly one. Changes " +
    "nothing. Call it before refresh_post_analytics or refresh_account_analytics and tell the user the cost.",
  parameters: { teamId: TeamId, postId: optional(PostId), socialAccountId: optional(SocialAccountId) },
  success: Estimate,
  hints: reads
})

const refreshDescription = (what: string, estimate: string) =>
  `Reads ${what} from the provider now, stores it as a snapshot and answers the analytics with it. It spends ` +
  `the organization's credits per account read (webhook accounts are free): estimate first with ${estimate}, ` +
  "tell the user the cost and refresh only once they agree. PaymentRequired when the credits are short (nothing " +
  "read); TooManyRequests when the account has used its provider's calls for now; Conflict when the provider " +
  "refuses (e.g. the account needs reconnecting): nothing is charged then. To retry after a timeout or an error, " +
  "call again with the idempotencyKey of the result (or the one you gave): the first answer is replayed instead " +
  "of paying twice."

export const RefreshPostAnalytics = apiTool("refresh_post_analytics", {
  title: "Refresh a post's analytics",
  description: refreshDescription("the post's engagement on each account it was published to", "estimate_analytics_refresh (postId)"),
  parameters: { ...postFields, idempotencyKey },
  success: idempotentAnswer(PostAnalytics.fields, "PostAnalyticsRefreshResult"),
  hints: { readonly: false, destructive: false, idempotent: false, openWorld: true }
})

export const RefreshAccountAnalytics = apiTool("refresh_account_analytics", {
  title: "Refresh an account's analytics",
  description: refreshDescription("the account's counts", "estimate_analytics_refresh (socialAccountId)"),
  parameters: { ...accountFields, idempotencyKey },
  success: idempotentAnswer(AccountAnalytics.fields, "AccountAnalyticsRefreshResult"),
  hints: { readonly: false, destructive: false, idempotent: false, openWorld: true }
})
