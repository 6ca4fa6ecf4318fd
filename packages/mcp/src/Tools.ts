import { McpSchema, Tool, Toolkit } from "@effect/ai"
import {
  AccountAnalytics,
  AgentContext,
  AnalyticsSeriesDefault,
  AnalyticsSeriesMax,
  AnalyticsSeriesQuery,
  Asset,
  AssetList,
  AssetListQuery,
  Billing,
  CreatePost,
  CreditBalance,
  DefaultPageSize,
  Estimate,
  IdempotencyKey,
  ImportAsset,
  integer,
  invalidUnless,
  listQueryFields,
  MaxPageSize,
  optional,
  OrganizationList,
  OrganizationPath,
  Post,
  PostId,
  PostAnalytics,
  PostList,
  PostListQuery,
  PostNowResponse,
  ScheduleRequest,
  ScheduleResponse,
  SocialAccountId,
  SocialAccountList,
  SocialAccountListQuery,
  strict,
  TargetAccounts,
  TeamId,
  TeamList,
  TeamListQuery,
  TeamPostingSlots,
  UpdatePost
} from "@postline/domain"
import { Schema } from "effect"
import { ToolError } from "./ToolError.js"

/** What a tool does to the world, as MCP's annotations say it. */
interface Hints {
  readonly readonly: boolean
  readonly destructive: boolean
  readonly idempotent: boolean
  /** Whether it reaches beyond Postline: a social network, or a URL on the internet. */
  readonly openWorld: boolean
}

const reads: Hints = { readonly: true, destructive: false, idempotent: true, openWorld: false }

/**
 * A tool of the API: its arguments are checked with the API's own schemas, strictly (an unknown argument is
 * named, every wrong one reported), and it fails with a ToolError. It acts for the MCP client that calls it.
 */
const apiTool = <const Name extends string, Fields extends Schema.Struct.Fields, Success extends Schema.Schema.Any>(
  name: Name,
  options: {
    readonly title: string
    readonly description: string
    readonly parameters: Fields
    readonly success: Success
    readonly hints: Hints
  }
) =>
  Tool.make(name, {
    description: options.description,
    success: options.success,
    failure: ToolError,
    dependencies: [McpSchema.McpServerClient]
  })
    .setParameters(Schema.Struct(options.parameters).annotations(strict))
    .annotate(Tool.Title, options.title)
    .annotate(Tool.Readonly, options.hints.readonly)
    .annotate(Tool.Destructive, options.hints.destructive)
    .annotate(Tool.Idempotent, options.hints.idempotent)
    .annotate(Tool.OpenWorld, options.hints.openWorld)

/**
 * Tool arguments are JSON, where a page size is a number; the API's query string carries the same number as
 * text (PageLimit), so lists take this in its place.
 */
const PageSize = integer(`Page size, a positive integer; default ${DefaultPageSize}, capped at ${MaxPageSize}`).pipe(
  Schema.filter((n) => n >= 1, { jsonSchema: { minimum: 1 } })
).annotations({ identifier: "PageSize", ...invalidUnless("must be a positive integer") })

const paged = { limit: optional(PageSize) }

/** A series' window: as the API's query (AnalyticsSeriesQuery), with its size a JSON number, like PageSize. */
const SeriesSize = integer(
  `How many of the newest snapshots each series holds, 1 to ${AnalyticsSeriesMax}; default ${AnalyticsSeriesDefault}`
).pipe(
  Schema.filter((n) => n >= 1 && n <= AnalyticsSeriesMax, { jsonSchema: { minimum: 1, maximum: AnalyticsSeriesMax } })
).annotations({ identifier: "SeriesSize", ...invalidUnless(`must be a whole number from 1 to ${AnalyticsSeriesMax}`) })

const seriesWindow = { limit: optional(SeriesSize), before: AnalyticsSeriesQuery.fields.before }

const teamFields = { teamId: TeamId }
const postFields = { teamId: TeamId, postId: PostId }
const accountFields = { teamId: TeamId, socialAccountId: SocialAccountId }

const idempotencyKey = optional(IdempotencyKey.annotations({
  description: "Any unique string of 1 to 255 printable ASCII characters, e.g. a UUID. To retry after a timeout or " +
    "an error, call again with the same key and arguments: the first answer is replayed (replayed: true) instead of " +
    "doing it twice (publishing, or paying for a refresh). Generated when absent, and returned in the result: keep it to retry"
}))

/** The answer of a publish or a refresh, with the key that makes retrying it safe and whether this answer is a replay. */
const idempotentAnswer = <Fields extends Schema.Struct.Fields>(fields: Fields, identifier: string) =>
  Schema.Struct({
    ...fields,
    idempotencyKey: IdempotencyKey,
    replayed: Schema.Boolean.annotations({
      description: "true: this is the first answer to this idempotencyKey again, and nothing was done a second time"
    })
  }).annotations({ identifier })

const [scheduleAt, scheduleInNextSlot] = ScheduleRequest.members

export const GetAgentContext = apiTool("get_agent_context", {
  title: "Who and where",
  description: "Who you act for and where: the user (null for an API key), the organizations and teams you can " +
    "access, and the default organization and team. Call this first: the other tools take these organizationId " +
    "and teamId values.",
  parameters: {},
  success: AgentContext,
  hints: reads
})

export const ListOrganizations = apiTool("list_organizations", {
  title: "List organizations",
  description: "The organizations you belong to, a page at a time (pass nextCursor as cursor for the next page). " +
    "An API key sees only its own organization.",
  parameters: { ...listQueryFields, ...paged },
  success: OrganizationList,
  hints: reads
})

export const ListTeams = apiTool("list_teams", {
  title: "List teams",
  description: "The teams you can access, of every organization or of one (organizationId). Posts, social " +
    "accounts, posting slots and media belong to a team.",
  parameters: { ...TeamListQuery.fields, ...paged },
  success: TeamList,
  hints: reads
})

export const ListSocialAccounts = apiTool("list_social_accounts", {
  title: "List social accounts",
  description: "The team's social accounts (Bluesky, Mastodon, webhook) that posts are published to, with their " +
    "ids and status. An account with status reconnect_required cannot publish until its credentials are updated.",
  parameters: { ...teamFields, ...SocialAccountListQuery.fields, ...paged },
  success: SocialAccountList,
  hints: reads
})

export const CreatePostTool = apiTool("create_post", {
  title: "Create a draft post",
  description: "Creates a draft post in a team; nothing is published. Give its content and, optionally, the " +
    "accounts it is meant for (ids from list_social_accounts) and media (asset ids from list_assets or " +
    "import_asset_from_url). Publish it with post_now or schedule_post.",
  parameters: { ...teamFields, ...CreatePost.fields },
  success: Post,
  hints: { readonly: false, destructive: false, idempotent: false, openWorld: false }
})

export const UpdatePostTool = apiTool("update_post", {
  title: "Change a draft post",
  description: "Changes a draft post: only the fields given (content, socialAccountIds, media, linkTracking) " +
    "change. A post that was published or scheduled cannot be changed (Conflict): unschedule it first.",
  parameters: { ...postFields, ...UpdatePost.fields },
  success: Post,
  hints: { readonly: false, destructive: true, idempotent: true, openWorld: false }
})

export const GetPost = apiTool("get_post", {
  title: "Get a post",
  description: "One post of the team, with its status and what became of it on each account (targets: the " +
    "published post's url, or the error). Use it to follow a scheduled or publishing post.",
  parameters: postFields,
  success: Post,
  hints: reads
})

export const ListPosts = apiTool("list_posts", {
  title: "List posts",
  description: "The team's posts, newest first by default, a page at a time; filter by status or socialAccountId.",
  parameters: { ...teamFields, ...PostListQuery.fields, ...paged },
  success: PostList,
  hints: reads
})

export const EstimatePost = apiTool("estimate_post", {
  title: "Estimate a publish's cost",
  description: "What publishing a post to these accounts would cost in credits, per account, and whether the " +
    "organization has enough (sufficient). Changes nothing. Call it before post_now or schedule_post and tell " +
    "the user the cost.",
  parameters: { ...postFields, ...TargetAccounts.fields },
  success: Estimate,
  hints: reads
})

export const PostNow = apiTool("post_now", {
  title: "Publish a post now",
  description: "Publishes the post to these accounts now and answers one result per account (published with its " +
    "url, failed with the reason, or pending while the network's answer is awaited) and an outcome. It spends " +
    "the organization's credits: estimate first with estimate_post, tell the user the cost and publish only " +
    "once they agree. To retry after a timeout or an error, call again with the idempotencyKey of the result " +
    "(or the one you gave): the first answer is replayed instead of publishing twice. Accounts that failed are " +
    "retried with a new key and only those accounts.",
  parameters: { ...postFields, ...TargetAccounts.fields, idempotencyKey },
  success: idempotentAnswer(PostNowResponse.fields, "PostNowResult"),
  hints: { readonly: false, destructive: false, idempotent: false, openWorld: true }
})

export const SchedulePost = apiTool("schedule_post", {
  title: "Schedule a post",
  description: "Schedules the post to be published to these accounts at scheduledAt (an ISO 8601 instant with an " +
    "offset, at least 10 seconds and at most a year ahead) or in the team's next free posting slot (slot: " +
    "\"next\", see list_posting_slots): give exactly one of them. The credits are held now: estimate first with " +
    "estimate_post, tell the user the cost and schedule only once they agree. Scheduling a scheduled post moves " +
    "it. Retry with the same idempotencyKey, as for post_now.",
  parameters: {
    ...postFields,
    socialAccountIds: scheduleAt.fields.socialAccountIds,
    scheduledAt: optional(scheduleAt.fields.scheduledAt),
    slot: optional(scheduleInNextSlot.fields.slot),
    idempotencyKey
  },
  success: idempotentAnswer(ScheduleResponse.fields, "ScheduleResult"),
  hints: { readonly: false, destructive: false, idempotent: false, openWorld: true }
})

export const UnschedulePost = apiTool("unschedule_post", {
  title: "Unschedule a post",
  description: "Returns a scheduled post to draft and releases the credits it held; nothing is published. Once " +
    "its publishing has begun, Conflict.",
  parameters: postFields,
  success: Post,
  hints: { readonly: false, destructive: true, idempotent: true, openWorld: false }
})

export const GetCredits = apiTool("get_credits", {
  title: "Get credits",
  description: "The organization's credits: balance, reserved (held for scheduled and running publishes) and " +
    "available (what a new publish may use).",
  parameters: OrganizationPath.fields,
  success: CreditBalance,
  hints: reads
})

export const ListPostingSlots = apiTool("list_posting_slots", {
  title: "List posting slots",
  description: "The team's weekly posting slots (ISO weekday and HH:MM in the team's timezone); schedule_post with " +
    "slot \"next\" takes the first of them after now that no scheduled post of the team holds.",
  parameters: teamFields,
  success: TeamPostingSlots,
  hints: reads
})

export const ImportAssetFromUrl = apiTool("import_asset_from_url", {
  title: "Import media from a URL",
  description: "Fetches an image or video (JPEG, PNG, WebP, GIF, HEIC or MP4) from a public https URL into the " +
    "team's media library and answers the asset: use its id in create_post's media. The same bytes imported " +
    "again give the asset the team already has.",
  parameters: { ...teamFields, ...ImportAsset.fields },
  success: Asset,
  hints: { readonly: false, destructive: false, idempotent: true, openWorld: true }
})

export const ListAssets = apiTool("list_assets", {
  title: "List media",
  description: "The team's media library (images and videos), filtered by folderId, kind or text (q); use an " +
    "asset's id in create_post's media.",
  parameters: { ...teamFields, ...AssetListQuery.fields, ...paged },
  success: AssetList,
  hints: reads
})

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

export const GetBilling = apiTool("get_billing", {
  title: "Get billing",
  description: "The organization's billing state: whether the server sells credits (enabled), the credit packs and " +
    "plan on sale, the credits, and (account) the subscription, auto-recharge and monthly spend cap with what was " +
    "spent this month. account is null for members who are not admins or owners: they see the credits only. " +
    "These tools buy nothing: an admin or owner buys credits (checkout), or the operator grants them when billing is off.",
  parameters: OrganizationPath.fields,
  success: Billing,
  hints: reads
})

/** Every tool of Postline's MCP server, over stdio and over HTTP alike. */
export const PostlineToolkit = Toolkit.make(
  GetAgentContext,
  ListOrganizations,
  ListTeams,
  ListSocialAccounts,
  CreatePostTool,
  UpdatePostTool,
  GetPost,
  ListPosts,
  EstimatePost,
  PostNow,
  SchedulePost,
  UnschedulePost,
  GetCredits,
  ListPostingSlots,
  ImportAssetFromUrl,
  ListAssets,
  GetPostAnalytics,
  GetAccountAnalytics,
  EstimateAnalyticsRefresh,
  RefreshPostAnalytics,
  RefreshAccountAnalytics,
  GetBilling
)
