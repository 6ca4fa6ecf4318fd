import { Toolkit } from "@effect/ai"
import {
  AgentContext,
  Asset,
  AssetList,
  AssetListQuery,
  Billing,
  CreditBalance,
  ImportAsset,
  listQueryFields,
  OrganizationList,
  OrganizationPath,
  SocialAccountList,
  SocialAccountListQuery,
  TeamList,
  TeamListQuery,
  TeamPostingSlots
} from "@postline/domain"
import { CheckAccountConnect, ConnectAccount } from "./AccountConnectTools.js"
import {
  EstimateAnalyticsRefresh,
  GetAccountAnalytics,
  GetPostAnalytics,
  RefreshAccountAnalytics,
  RefreshPostAnalytics
} from "./AnalyticsTools.js"
import { apiTool, paged, reads, teamFields } from "./ApiTool.js"
import {
  CreatePostTool,
  EstimatePost,
  GetPost,
  ListPosts,
  PostNow,
  SchedulePost,
  UnpublishPost,
  UnschedulePost,
  UpdatePostTool
} from "./PostTools.js"
import { ListProviders } from "./ProviderTools.js"

export * from "./AccountConnectTools.js"
export * from "./AnalyticsTools.js"
export * from "./PostTools.js"
export * from "./ProviderTools.js"

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
  description: "The team's social accounts (Bluesky, Mastodon, X, Telegram, Discord, webhook) that posts are published to, with their " +
    "ids and status. An account with status reconnect_required cannot publish until it is connected again " +
    "(connect_account, for Bluesky, Mastodon and X).",
  parameters: { ...teamFields, ...SocialAccountListQuery.fields, ...paged },
  success: SocialAccountList,
  hints: reads
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
  ConnectAccount,
  CheckAccountConnect,
  ListProviders,
  CreatePostTool,
  UpdatePostTool,
  GetPost,
  ListPosts,
  EstimatePost,
  PostNow,
  SchedulePost,
  UnschedulePost,
  UnpublishPost,
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
