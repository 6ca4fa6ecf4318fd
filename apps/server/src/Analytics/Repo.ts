import { SqlClient } from "@effect/sql"
import type {
  AccountSnapshot,
  EngagementSnapshot,
  PostId,
  SocialAccountId,
  SocialProvider,
  TeamId
} from "@postline/domain"
import { Effect } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc } from "../Database/Columns.js"
import type { BudgetWindow } from "../Providers/Budgets.js"
import { lockProviderUsage } from "../Providers/ProviderCalls.js"
import type { AccountCounts, Engagement } from "../Providers/SocialProvider.js"

/** An account to read from: null fields once it was removed. */
export interface ReadableAccount {
  readonly id: SocialAccountId
  readonly provider: SocialProvider
  readonly status: "connected" | "reconnect_required"
  readonly ciphertext: string
}

/** A published target of a post, and its account while there is one. */
export interface PublishedTarget {
  readonly postId: PostId
  readonly socialAccountId: SocialAccountId
  readonly externalId: string
  readonly publishedAt: Date
  readonly account: ReadableAccount | null
}

/** A target whose snapshot is due, claimed for a while. */
export type DueTarget = PublishedTarget

export interface TargetKey {
  readonly postId: PostId
  readonly socialAccountId: SocialAccountId
}

/** Which snapshots a series holds: the newest `limit` taken before `before` (null: all). */
export interface SeriesWindow {
  readonly limit: number
  readonly before: Date | null
}

export type StoredEngagement = EngagementSnapshot & { readonly socialAccountId: SocialAccountId }

const accountJson = `CASE WHEN sa.id IS NOT NULL THEN json_build_object('id', sa.id, 'provider', sa.provider,
  'status', sa.status, 'ciphertext', sa.credentials) END`

/**
 * The SQL of analytics. Snapshots are only ever added. What is due carries its time (`analytics_due_at`,
 * indexed); each process claims due rows in small batches, skipping what another has locked, and leases them
 * (moves their time on) so that a process that dies leaves them due again.
 */
export class AnalyticsRepo extends Effect.Service<AnalyticsRepo>()("AnalyticsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const engagementColumns = sql.literal(`s.social_account_id AS "socialAccountId", ${isoUtc("s.taken_at")} AS "takenAt",
      s.likes::float8 AS likes, s.reposts::float8 AS reposts, s.replies::float8 AS replies, s.quotes::float8 AS quotes,
      s.views::float8 AS views, s.link_clicks::float8 AS "linkClicks"`)

    const postExists = (teamId: TeamId, postId: PostId) =>
      sql`SELECT 1 FROM posts WHERE id = ${postId} AND team_id = ${teamId}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /** The post's published targets, in the order they were made, with their accounts. */
    const publishedTargets = (teamId: TeamId, postId: PostId) =>
      sql<PublishedTarget>`SELECT pt.post_id AS "postId", pt.social_account_id AS "socialAccountId",
          pt.external_id AS "externalId", pt.published_at AS "publishedAt", ${sql.literal(accountJson)} AS account
        FROM post_targets pt JOIN posts p ON p.id = pt.post_id
          LEFT JOIN social_accounts sa ON sa.id = pt.social_account_id AND sa.team_id = p.team_id
        WHERE p.id = ${postId} AND p.team_id = ${teamId} AND pt.status = 'published' AND pt.external_id IS NOT NULL
        ORDER BY pt.created_at, pt.social_account_id`.pipe(Effect.orDie)

    /** Each target's newest `window.limit` snapshots taken before `window.before`, oldest first. */
    const postSnapshots = (postId: PostId, window: SeriesWindow) =>
      sql<StoredEngagement>`SELECT ${engagementColumns} FROM (
          SELECT *, row_number() OVER (PARTITION BY social_account_id ORDER BY taken_at DESC, id DESC) AS n
          FROM post_snapshots WHERE post_id = ${postId} AND (${window.before}::timestamptz IS NULL OR taken_at < ${window.before})
        ) s WHERE s.n <= ${window.limit} ORDER BY s.taken_at, s.id`.pipe(Effect.orDie)

    /** Each target's newest snapshot. */
    const latestPostSnapshots = (postId: PostId) =>
      sql<StoredEngagement>`SELECT DISTINCT ON (s.social_account_id) ${engagementColumns} FROM post_snapshots s
        WHERE s.post_id = ${postId} ORDER BY s.social_account_id, s.taken_at DESC, s.id DESC`.pipe(Effect.orDie)

    const account = (teamId: TeamId, socialAccountId: SocialAccountId) =>
      sql<ReadableAccount>`SELECT sa.id, sa.provider, sa.status, sa.credentials AS ciphertext FROM social_accounts sa
        WHERE sa.id = ${socialAccountId} AND sa.team_id = ${teamId}`.pipe(Effect.map(([row]) => row), Effect.orDie)

    const accountColumns = sql.literal(`${isoUtc("s.taken_at")} AS "takenAt", s.followers::float8 AS followers,
      s.following::float8 AS following, s.posts::float8 AS posts`)

    /** The account's newest `window.limit` snapshots taken before `window.before`, oldest first. */
    const accountSnapshots = (socialAccountId: SocialAccountId, window: SeriesWindow) =>
      sql<AccountSnapshot>`SELECT * FROM (
          SELECT ${accountColumns}, s.taken_at, s.id FROM account_snapshots s WHERE s.social_account_id = ${socialAccountId}
            AND (${window.before}::timestamptz IS NULL OR s.taken_at < ${window.before})
          ORDER BY s.taken_at DESC, s.id DESC LIMIT ${window.limit}
        ) w ORDER BY w.taken_at, w.id`.pipe(
        Effect.map((rows) => rows.map(({ followers, following, posts, takenAt }) => ({ takenAt, followers, following, posts }))),
        Effect.orDie
      )

    const latestAccountSnapshot = (socialAccountId: SocialAccountId) =>
      sql<AccountSnapshot>`SELECT ${accountColumns} FROM account_snapshots s WHERE s.social_account_id = ${socialAccountId}
        ORDER BY s.taken_at DESC, s.id DESC LIMIT 1`.pipe(Effect.map(([row]) => row ?? null), Effect.orDie)

    /** Clicks on the posts' tracked links so far, per post. */
    const linkClicks = (postIds: ReadonlyArray<PostId>) =>
      sql<{ readonly postId: PostId; readonly clicks: number }>`SELECT post_id AS "postId", sum(clicks)::float8 AS clicks
        FROM post_links WHERE post_id IN ${sql.in(postIds)} GROUP BY post_id`.pipe(
        Effect.map((rows) => new Map(rows.map((row) => [row.postId, row.clicks]))),
        Effect.orDie
      )

    /** Adds one snapshot per read post, each with the post's link clicks. */
    const addPostSnapshots = (
      takenAt: Date,
      snapshots: ReadonlyArray<{ readonly postId: PostId; readonly socialAccountId: SocialAccountId; readonly engagement: Engagement }>
    ) =>
      Effect.gen(function*() {
        if (snapshots.length === 0) return
        const clicks = yield* linkClicks([...new Set(snapshots.map((snapshot) => snapshot.postId))])
        const rows = snapshots.map(({ engagement, postId, socialAccountId }) => ({
          postId,
          socialAccountId,
          likes: engagement.likes,
          reposts: engagement.reposts,
          replies: engagement.replies,
          quotes: engagement.quotes,
          views: engagement.views,
          linkClicks: clicks.get(postId) ?? 0,
          raw: engagement.raw
        }))
        // One JSON document whose `raw` fields are jsonb as they are: the provider's answer stays an object.
        yield* sql`INSERT INTO post_snapshots
            (post_id, social_account_id, taken_at, likes, reposts, replies, quotes, views, link_clicks, raw)
          SELECT s."postId", s."socialAccountId", ${takenAt}, s.likes, s.reposts, s.replies, s.quotes, s.views, s."linkClicks", s.raw
          FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS s ("postId" uuid, "socialAccountId" uuid, likes bigint,
            reposts bigint, replies bigint, quotes bigint, views bigint, "linkClicks" bigint, raw jsonb)`
      }).pipe(Effect.orDie)

    const addAccountSnapshot = (socialAccountId: SocialAccountId, takenAt: Date, counts: AccountCounts) =>
      sql`INSERT INTO account_snapshots (social_account_id, taken_at, followers, following, posts, raw)
        VALUES (${socialAccountId}, ${takenAt}, ${counts.followers}, ${counts.following}, ${counts.posts},
          ${JSON.stringify(counts.raw)}::jsonb)`.pipe(Effect.asVoid, Effect.orDie)

    /**
     * Of these accounts of the team, those still there, locked against their removal until the transaction
     * ends: what is charged and stored for them then refers to rows that exist.
     */
    const lockAccounts = (teamId: TeamId, socialAccountIds: ReadonlyArray<SocialAccountId>) =>
      socialAccountIds.length === 0
        ? Effect.succeed(new Set<SocialAccountId>())
        : sql<{ readonly id: SocialAccountId }>`SELECT id FROM social_accounts
            WHERE id IN ${sql.in(socialAccountIds)} AND team_id = ${teamId} FOR KEY SHARE`.pipe(
            Effect.map((rows) => new Set(rows.map((row) => row.id))),
            Effect.orDie
          )

    /** Up to `limit` targets due at `now`, oldest due first, leased until `leasedUntil`; answered in publishing order. */
    const claimDueTargets = (now: Date, limit: number, leasedUntil: Date) =>
      sql<DueTarget>`WITH due AS (
          SELECT post_id, social_account_id FROM post_targets WHERE analytics_due_at <= ${now}
          ORDER BY analytics_due_at LIMIT ${limit} FOR UPDATE SKIP LOCKED),
        leased AS (
          UPDATE post_targets pt SET analytics_due_at = ${leasedUntil}
          FROM due WHERE pt.post_id = due.post_id AND pt.social_account_id = due.social_account_id
          RETURNING pt.post_id, pt.social_account_id, pt.external_id, pt.published_at)
        SELECT l.post_id AS "postId", l.social_account_id AS "socialAccountId", l.external_id AS "externalId",
          l.published_at AS "publishedAt", ${sql.literal(accountJson)} AS account
        FROM leased l JOIN posts p ON p.id = l.post_id
          LEFT JOIN social_accounts sa ON sa.id = l.social_account_id AND sa.team_id = p.team_id
        ORDER BY l.published_at, l.post_id`.pipe(Effect.orDie)

    /**
     * Moves each target still leased until `heldUntil` to its `at` (a new lease, its next read, or null: never);
     * answers those moved. One whose lease ran out and that another process claimed since is left to it.
     */
    const moveLeasedTargets = (
      targets: ReadonlyArray<{ readonly postId: PostId; readonly socialAccountId: SocialAccountId; readonly at: Date | null }>,
      heldUntil: Date
    ) =>
      targets.length === 0
        ? Effect.succeed<ReadonlyArray<TargetKey>>([])
        : sql<TargetKey>`WITH t AS (
            SELECT * FROM jsonb_to_recordset(${JSON.stringify(targets)}::jsonb) AS t ("postId" uuid, "socialAccountId" uuid, at timestamptz))
          UPDATE post_targets pt SET analytics_due_at = t.at
          FROM t WHERE pt.post_id = t."postId" AND pt.social_account_id = t."socialAccountId" AND pt.analytics_due_at = ${heldUntil}
          RETURNING pt.post_id AS "postId", pt.social_account_id AS "socialAccountId"`.pipe(Effect.orDie)

    /** Up to `limit` accounts whose daily counts are due at `now`, leased until `leasedUntil`. */
    const claimDueAccounts = (now: Date, limit: number, leasedUntil: Date) =>
      sql<ReadableAccount>`WITH due AS (
          SELECT id FROM social_accounts WHERE analytics_due_at <= ${now}
          ORDER BY analytics_due_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
        UPDATE social_accounts sa SET analytics_due_at = ${leasedUntil}
        FROM due WHERE sa.id = due.id
        RETURNING sa.id, sa.provider, sa.status, sa.credentials AS ciphertext`.pipe(Effect.orDie)

    /** Moves the account to `at` if it is still leased until `heldUntil`; answers whether it was. */
    const moveLeasedAccount = (socialAccountId: SocialAccountId, heldUntil: Date, at: Date | null) =>
      sql`UPDATE social_accounts SET analytics_due_at = ${at} WHERE id = ${socialAccountId} AND analytics_due_at = ${heldUntil}
        RETURNING id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /** The account's provider calls in each window (sends and analytics reads together), its row locked. */
    const lockUsage = (socialAccountId: SocialAccountId, now: Date, windows: ReadonlyArray<BudgetWindow>) =>
      lockProviderUsage(sql, socialAccountId, windows, now).pipe(Effect.orDie)

    /** One provider call for analytics, counted against the account's budgets; those older than a day are let go. */
    const recordRead = (socialAccountId: SocialAccountId, at: Date) =>
      Effect.gen(function*() {
        yield* sql`DELETE FROM analytics_reads WHERE social_account_id = ${socialAccountId}
          AND read_at < ${at}::timestamptz - interval '1 day'`
        yield* sql`INSERT INTO analytics_reads (social_account_id, read_at) VALUES (${socialAccountId}, ${at})`
      }).pipe(Effect.orDie)

    return {
      postExists: (teamId: TeamId, postId: PostId) => policyRequire("Analytics", "read")(postExists(teamId, postId)),
      publishedTargets: (teamId: TeamId, postId: PostId) =>
        policyRequire("Analytics", "read")(publishedTargets(teamId, postId)),
      postSnapshots: (postId: PostId, window: SeriesWindow) => policyRequire("Analytics", "read")(postSnapshots(postId, window)),
      latestPostSnapshots: (postId: PostId) => policyRequire("Analytics", "read")(latestPostSnapshots(postId)),
      account: (teamId: TeamId, socialAccountId: SocialAccountId) =>
        policyRequire("Analytics", "read")(account(teamId, socialAccountId)),
      accountSnapshots: (socialAccountId: SocialAccountId, window: SeriesWindow) =>
        policyRequire("Analytics", "read")(accountSnapshots(socialAccountId, window)),
      latestAccountSnapshot: (socialAccountId: SocialAccountId) =>
        policyRequire("Analytics", "read")(latestAccountSnapshot(socialAccountId)),
      lockAccounts: (...args: Parameters<typeof lockAccounts>) => policyRequire("Analytics", "refresh")(lockAccounts(...args)),
      addPostSnapshots: (...args: Parameters<typeof addPostSnapshots>) =>
        policyRequire("Analytics", "refresh")(addPostSnapshots(...args)),
      addAccountSnapshot: (...args: Parameters<typeof addAccountSnapshot>) =>
        policyRequire("Analytics", "refresh")(addAccountSnapshot(...args)),
      lockUsage: (...args: Parameters<typeof lockUsage>) => policyRequire("Analytics", "refresh")(lockUsage(...args)),
      recordRead: (...args: Parameters<typeof recordRead>) => policyRequire("Analytics", "refresh")(recordRead(...args)),
      claimDueTargets: (...args: Parameters<typeof claimDueTargets>) =>
        policyRequire("Analytics", "refresh")(claimDueTargets(...args)),
      moveLeasedTargets: (...args: Parameters<typeof moveLeasedTargets>) =>
        policyRequire("Analytics", "refresh")(moveLeasedTargets(...args)),
      claimDueAccounts: (...args: Parameters<typeof claimDueAccounts>) =>
        policyRequire("Analytics", "refresh")(claimDueAccounts(...args)),
      moveLeasedAccount: (...args: Parameters<typeof moveLeasedAccount>) =>
        policyRequire("Analytics", "refresh")(moveLeasedAccount(...args))
    } as const
  })
}) {}
