import type { HttpClientResponse } from "@effect/platform"
import { type OAuthProvider, type PostlineClient, replayedHeader } from "@postline/domain"
import { Effect } from "effect"
import { ToolCaller } from "./ToolCaller.js"
import { ToolError, toToolError } from "./ToolError.js"
import { PostlineToolkit } from "./Tools.js"

/** The Idempotency-Key header of the API's publishing and refreshing endpoints, as the domain's client takes it. */
type IdempotencyHeaders = Parameters<PostlineClient["posts"]["postNow"]>[0]["headers"]

/**
 * A publish's (or a refresh's) answer with its idempotency key and whether the API replayed it. The key is the agent's, or one
 * made here: either way the API gets it as Idempotency-Key, and the result gives it back for a retry.
 */
const idempotently = <A, E, R>(
  idempotencyKey: string | undefined,
  publish: (headers: IdempotencyHeaders) => Effect.Effect<readonly [A, HttpClientResponse.HttpClientResponse], E, R>
) => {
  const key = idempotencyKey ?? crypto.randomUUID()
  return Effect.map(publish({ "idempotency-key": key }), ([answer, response]) => ({
    ...answer,
    idempotencyKey: key,
    replayed: response.headers[replayedHeader] === "true"
  }))
}

/** A request to start a connect, of any network, answered without the response. */
type StartRequest = Extract<Parameters<PostlineClient["accountConnects"]["startAccountConnect"]>[0], { readonly withResponse?: false }>

/** What the agent does next, in connect_account's answer itself: an agent that skims descriptions still reads this. */
const connectInstructions = "Show the user authorizationUrl and ask them to open it in their browser, sign in at the " +
  "network and approve Postline before expiresAt. Then call check_account_connect with this connectId: the account " +
  "is connected only once it answers status connected."

/** What connect_account starts: each network with the one argument it takes (instanceUrl, handle, or none). */
const startPayload = (provider: OAuthProvider, instanceUrl: string | undefined, handle: string | undefined) =>
  provider === "mastodon" && instanceUrl !== undefined && handle === undefined
    ? { provider, instanceUrl }
    : provider === "bluesky" && handle !== undefined && instanceUrl === undefined
    ? { provider, handle }
    : provider === "x" && handle === undefined && instanceUrl === undefined
    ? { provider }
    : undefined

/** The handlers of every tool: each calls the API as its caller, whose access rules, limits and idempotency apply. */
export const PostlineToolHandlers = PostlineToolkit.toLayer(Effect.gen(function*() {
  const caller = yield* ToolCaller

  const withClient = <A, E>(call: (client: PostlineClient) => Effect.Effect<A, E>) =>
    caller.client.pipe(
      Effect.flatMap(call),
      Effect.catchAll((error) => Effect.flatMap(toToolError(error), Effect.fail))
    )

  return PostlineToolkit.of({
    get_agent_context: () => withClient((client) => client.agent.getContext()),
    list_organizations: (urlParams) => withClient((client) => client.organizations.listOrganizations({ urlParams })),
    list_teams: (urlParams) => withClient((client) => client.teams.listTeams({ urlParams })),
    list_social_accounts: ({ teamId, ...urlParams }) =>
      withClient((client) => client.socialAccounts.listSocialAccounts({ path: { teamId }, urlParams })),
    connect_account: ({ handle, instanceUrl, provider, teamId }) => {
      const payload = startPayload(provider, instanceUrl, handle)
      if (payload === undefined) {
        return Effect.fail(
          new ToolError({
            _tag: "InvalidArguments",
            message: "Give instanceUrl with provider mastodon, handle with provider bluesky, and neither with x"
          })
        )
      }
      return withClient((client) =>
        Effect.map(
          client.accountConnects.startAccountConnect({ path: { teamId }, payload } as StartRequest),
          (started) => ({ ...started, instructions: connectInstructions })
        )
      )
    },
    check_account_connect: (path) => withClient((client) => client.accountConnects.getAccountConnect({ path })),
    list_providers: () => withClient((client) => client.providers.listProviders()),
    create_post: ({ teamId, ...payload }) => withClient((client) => client.posts.createPost({ path: { teamId }, payload })),
    update_post: ({ postId, teamId, ...payload }) =>
      withClient((client) => client.posts.updatePost({ path: { teamId, postId }, payload })),
    get_post: (path) => withClient((client) => client.posts.getPost({ path })),
    list_posts: ({ teamId, ...urlParams }) => withClient((client) => client.posts.listPosts({ path: { teamId }, urlParams })),
    estimate_post: ({ postId, socialAccountIds, teamId }) =>
      withClient((client) => client.posts.estimatePost({ path: { teamId, postId }, payload: { socialAccountIds } })),
    post_now: ({ idempotencyKey, postId, socialAccountIds, teamId }) =>
      withClient((client) =>
        idempotently(idempotencyKey, (headers) =>
          client.posts.postNow({ path: { teamId, postId }, headers, payload: { socialAccountIds }, withResponse: true }))
      ),
    schedule_post: ({ idempotencyKey, postId, scheduledAt, slot, socialAccountIds, teamId }) => {
      const path = { teamId, postId }
      // The API takes one or the other: a time, or the next slot.
      const request = scheduledAt !== undefined && slot === undefined
        ? (headers: IdempotencyHeaders) => ({ path, headers, payload: { socialAccountIds, scheduledAt }, withResponse: true as const })
        : slot !== undefined && scheduledAt === undefined
        ? (headers: IdempotencyHeaders) => ({ path, headers, payload: { socialAccountIds, slot }, withResponse: true as const })
        : undefined
      if (request === undefined) {
        return Effect.fail(new ToolError({ _tag: "InvalidArguments", message: "Give exactly one of scheduledAt or slot" }))
      }
      return withClient((client) =>
        idempotently(idempotencyKey, (headers) => client.posts.schedulePost(request(headers)))
      )
    },
    unschedule_post: (path) => withClient((client) => client.posts.unschedulePost({ path })),
    unpublish_post: ({ idempotencyKey, postId, socialAccountIds, teamId }) =>
      withClient((client) =>
        idempotently(idempotencyKey, (headers) =>
          client.posts.unpublishPost({
            path: { teamId, postId },
            headers,
            // Without accounts: every account the post is published to.
            payload: socialAccountIds === undefined ? {} : { socialAccountIds },
            withResponse: true
          }))
      ),
    get_credits: (path) => withClient((client) => client.credits.getCredits({ path })),
    list_posting_slots: (path) => withClient((client) => client.postingSlots.getPostingSlots({ path })),
    import_asset_from_url: ({ teamId, ...payload }) =>
      withClient((client) => client.assets.importAsset({ path: { teamId }, payload })),
    list_assets: ({ teamId, ...urlParams }) => withClient((client) => client.assets.listAssets({ path: { teamId }, urlParams })),
    get_post_analytics: ({ postId, teamId, ...urlParams }) =>
      withClient((client) => client.analytics.getPostAnalytics({ path: { teamId, postId }, urlParams })),
    get_account_analytics: ({ socialAccountId, teamId, ...urlParams }) =>
      withClient((client) => client.analytics.getAccountAnalytics({ path: { teamId, socialAccountId }, urlParams })),
    estimate_analytics_refresh: ({ postId, socialAccountId, teamId }) =>
      // The API has an estimate of each: a post's, or an account's.
      postId !== undefined && socialAccountId === undefined
        ? withClient((client) => client.analytics.estimatePostAnalyticsRefresh({ path: { teamId, postId } }))
        : socialAccountId !== undefined && postId === undefined
        ? withClient((client) => client.analytics.estimateAccountAnalyticsRefresh({ path: { teamId, socialAccountId } }))
        : Effect.fail(new ToolError({ _tag: "InvalidArguments", message: "Give exactly one of postId or socialAccountId" })),
    refresh_post_analytics: ({ idempotencyKey, postId, teamId }) =>
      withClient((client) =>
        idempotently(idempotencyKey, (headers) =>
          client.analytics.refreshPostAnalytics({ path: { teamId, postId }, headers, withResponse: true }))
      ),
    refresh_account_analytics: ({ idempotencyKey, socialAccountId, teamId }) =>
      withClient((client) =>
        idempotently(idempotencyKey, (headers) =>
          client.analytics.refreshAccountAnalytics({ path: { teamId, socialAccountId }, headers, withResponse: true }))
      ),
    get_billing: (path) => withClient((client) => client.billing.getBilling({ path }))
  })
}))
