import { Command, Options } from "@effect/cli"
import {
  AccountAnalytics,
  AnalyticsSeriesDefault,
  AnalyticsSeriesMax,
  AnalyticsSeriesQuery,
  type EngagementSnapshot,
  IdempotencyKey,
  PostAnalytics,
  PostId,
  SocialAccountId,
  type TeamId
} from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect, Option } from "effect"
import { decodedArg, decodedOption, serverOptions, team, yes } from "../CommonOptions.js"
import { confirmed } from "../Confirmation.js"
import { UsageError } from "../Errors.js"
import { exitCodeOf } from "../ExitCodes.js"
import { commandGroup } from "../Group.js"
import { failureOf, Output } from "../Output.js"
import { online } from "../Session.js"
import { withSpinner } from "../Spinner.js"
import { fields, orDash, table } from "../Table.js"
import { teamOf } from "../Workspace.js"
import { accountsById, estimateText, unaffordable } from "./Publishing.js"

/** The window of a series, in the query's own schemas. */
const seriesOptions = {
  limit: decodedOption("limit", AnalyticsSeriesQuery.fields.limit.from, "n").pipe(
    Options.optional,
    Options.withDescription(`How many of the newest snapshots to show per series (default ${AnalyticsSeriesDefault}, at most ${AnalyticsSeriesMax})`)
  ),
  before: decodedOption("before", AnalyticsSeriesQuery.fields.before.from, "instant").pipe(
    Options.optional,
    Options.withDescription("Only snapshots taken before this ISO 8601 instant with an offset (for older ones: a series' oldest time)")
  )
}

/** The query's fields, only those given. */
const seriesParams = (window: { readonly limit: Option.Option<number>; readonly before: Option.Option<string> }) => ({
  ...Option.match(window.limit, { onNone: () => ({}), onSome: (limit) => ({ limit }) }),
  ...Option.match(window.before, { onNone: () => ({}), onSome: (before) => ({ before }) })
})

const engagementColumns = [
  { header: "taken at", value: (snapshot: EngagementSnapshot) => snapshot.takenAt },
  { header: "likes", value: (snapshot: EngagementSnapshot) => orDash(snapshot.likes) },
  { header: "reposts", value: (snapshot: EngagementSnapshot) => orDash(snapshot.reposts) },
  { header: "replies", value: (snapshot: EngagementSnapshot) => orDash(snapshot.replies) },
  { header: "quotes", value: (snapshot: EngagementSnapshot) => orDash(snapshot.quotes) },
  { header: "views", value: (snapshot: EngagementSnapshot) => orDash(snapshot.views) },
  { header: "link clicks", value: (snapshot: EngagementSnapshot) => String(snapshot.linkClicks) }
]

/** A post's analytics for people: each account's latest counts, then every snapshot of the series shown. */
const postAnalyticsText = (analytics: PostAnalytics) => {
  const series = analytics.targets.flatMap((target) => target.series.map((snapshot) => ({ target, snapshot })))
  return [
    `Post ${analytics.postId}, the latest on each account (- not read yet, or not said by the provider):`,
    table([
      { header: "account", value: ({ target }) => target.socialAccountId },
      { header: "provider", value: ({ target }) => orDash(target.provider) },
      ...engagementColumns.map((column) => ({
        header: column.header,
        value: ({ latest }: { readonly latest: EngagementSnapshot | null }) => latest === null ? "-" : column.value(latest)
      }))
    ], analytics.targets.map((target) => ({ target, latest: target.latest }))),
    "",
    "Series (oldest first):",
    table([
      { header: "account", value: (row) => row.target.socialAccountId },
      ...engagementColumns.map((column) => ({ header: column.header, value: (row: typeof series[number]) => column.value(row.snapshot) }))
    ], series)
  ].join("\n")
}

/** An account's analytics for people: the account, then its counts over time. */
const accountAnalyticsText = (analytics: AccountAnalytics) =>
  [
    fields([
      ["Account", analytics.socialAccountId],
      ["Provider", analytics.provider],
      ["Latest", analytics.latest === null ? "- (not read yet)" : analytics.latest.takenAt]
    ]),
    "",
    "Series (oldest first):",
    table([
      { header: "taken at", value: (snapshot) => snapshot.takenAt },
      { header: "followers", value: (snapshot) => orDash(snapshot.followers) },
      { header: "following", value: (snapshot) => orDash(snapshot.following) },
      { header: "posts", value: (snapshot) => orDash(snapshot.posts) }
    ], analytics.series)
  ].join("\n")

const post = Command.make("post", { ...serverOptions, team, postId: decodedArg("postId", PostId, "The published post's id"), ...seriesOptions }, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const teamId = yield* teamOf(options.team)
    const analytics = yield* client.analytics.getPostAnalytics({
      path: { teamId, postId: options.postId },
      urlParams: seriesParams(options)
    })
    yield* (yield* Output).answer(PostAnalytics, analytics, postAnalyticsText)
  }).pipe(online(options))).pipe(
    Command.withDescription("A published post's engagement on each account, as last read, and its snapshots over time; free")
  )

const account = Command.make("account", {
  ...serverOptions,
  team,
  accountId: decodedArg("accountId", SocialAccountId, "The account's id (postline accounts list shows them)"),
  ...seriesOptions
}, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const teamId = yield* teamOf(options.team)
    const analytics = yield* client.analytics.getAccountAnalytics({
      path: { teamId, socialAccountId: options.accountId },
      urlParams: seriesParams(options)
    })
    yield* (yield* Output).answer(AccountAnalytics, analytics, accountAnalyticsText)
  }).pipe(online(options))).pipe(
    Command.withDescription("A social account's follower, following and post counts over time (read daily); free")
  )

/** What a refresh reads: a post's targets, or an account. */
type Refreshed =
  | { readonly _tag: "Post"; readonly postId: PostId }
  | { readonly _tag: "Account"; readonly socialAccountId: SocialAccountId }

const estimateOf = (teamId: TeamId, refreshed: Refreshed) =>
  Effect.flatMap(Postline, ({ client }) =>
    refreshed._tag === "Post"
      ? client.analytics.estimatePostAnalyticsRefresh({ path: { teamId, postId: refreshed.postId } })
      : client.analytics.estimateAccountAnalyticsRefresh({ path: { teamId, socialAccountId: refreshed.socialAccountId } }))

/**
 * The preview of a refresh: the estimate and the organization's credits. A spend the organization cannot make
 * now ends the command here, as the server would (402), instead of asking a question whose yes cannot succeed.
 */
const refreshPreview = (heading: string, teamId: TeamId, refreshed: Refreshed) =>
  Effect.gen(function*() {
    const estimate = yield* estimateOf(teamId, refreshed)
    if (!estimate.sufficient) return yield* unaffordable("refreshing", estimate)
    return `${heading}\n${estimateText(estimate, yield* accountsById(teamId))}`
  })

const idempotencyKey = decodedOption("idempotency-key", IdempotencyKey, "key").pipe(
  Options.optional,
  Options.withDescription("Sent as Idempotency-Key (default: a new UUID): the same key again gets the first answer instead of paying twice")
)

/** After a refresh that ended without a definite answer, how to learn it without paying twice; a refusal needs no such advice. */
const keyForRetry = (key: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.tapError(effect, (error) =>
    exitCodeOf(failureOf(error)) === 1
      ? Effect.flatMap(Output, (output) => output.note(`To try again without paying twice, repeat the command with --idempotency-key ${key}`))
      : Effect.void)

const refresh = Command.make("refresh", {
  ...serverOptions,
  team,
  post: decodedOption("post", PostId, "id").pipe(Options.optional, Options.withDescription("Read this post's engagement on each account it was published to")),
  account: decodedOption("account", SocialAccountId, "id").pipe(Options.optional, Options.withDescription("Read this account's counts")),
  idempotencyKey,
  yes
}, (options) =>
  Effect.gen(function*() {
    const refreshed: Option.Option<Refreshed> = Option.isSome(options.post) === Option.isSome(options.account)
      ? Option.none()
      : Option.isSome(options.post)
      ? Option.some({ _tag: "Post", postId: options.post.value })
      : Option.map(options.account, (socialAccountId) => ({ _tag: "Account", socialAccountId }))
    if (Option.isNone(refreshed)) return yield* new UsageError({ message: "Pass either --post <id> or --account <id>" })
    const { client } = yield* Postline
    const teamId = yield* teamOf(options.team)
    const what = refreshed.value
    yield* confirmed({
      yes: options.yes,
      action: "refreshing analytics",
      preview: refreshPreview(
        what._tag === "Post"
          ? `Read the engagement of post ${what.postId} on each account it was published to now:`
          : `Read the counts of account ${what.socialAccountId} now:`,
        teamId,
        what
      )
    })
    const key = Option.getOrElse(options.idempotencyKey, () => crypto.randomUUID())
    const headers = { "idempotency-key": key }
    const output = yield* Output
    if (what._tag === "Post") {
      const analytics = yield* client.analytics.refreshPostAnalytics({ path: { teamId, postId: what.postId }, headers }).pipe(
        withSpinner("Reading the post's engagement…"),
        keyForRetry(key)
      )
      yield* output.answer(PostAnalytics, analytics, postAnalyticsText)
    } else {
      const analytics = yield* client.analytics.refreshAccountAnalytics({ path: { teamId, socialAccountId: what.socialAccountId }, headers }).pipe(
        withSpinner("Reading the account's counts…"),
        keyForRetry(key)
      )
      yield* output.answer(AccountAnalytics, analytics, accountAnalyticsText)
    }
  }).pipe(online(options))).pipe(
    Command.withDescription(
      "Reads a --post's engagement or an --account's counts from the provider now, for credits (asks first, showing the cost and your credits)"
    )
  )

export const analyticsCommand = commandGroup("analytics", "Analytics of posts and accounts: post, account, refresh", [post, account, refresh])
