import { SqlClient } from "@effect/sql"
import type { PostId, SocialAccountId, SocialProvider } from "@postline/domain"
import { Effect } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import type { BudgetWindow, Usage } from "./Budgets.js"
import type { AttemptToSend } from "./Repo.js"

/** A target whose time has come, locked with its post; its provider is null once its account is removed. */
export type DueTarget = Omit<AttemptToSend, "attempt" | "ordinal"> & { readonly provider: SocialProvider | null }

/**
 * The SQL of due-time dispatch: targets carry when they are next to be sent (`due_at`, indexed), and each
 * process claims those that are due in small batches, skipping what another process has locked.
 */
export class DispatchRepo extends Effect.Service<DispatchRepo>()("DispatchRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Up to `limit` due targets, oldest due first, locked with their posts until the transaction ends. */
    const claimDue = (limit: number) =>
      sql<DueTarget>`SELECT pt.post_id AS "postId", pt.social_account_id AS "socialAccountId",
          p.team_id AS "teamId", t.organization_id AS "organizationId", p.content, p.link_tracking AS "linkTracking",
          pt.credits_reserved AS "creditsReserved", sa.provider
        FROM post_targets pt JOIN posts p ON p.id = pt.post_id JOIN teams t ON t.id = p.team_id
          LEFT JOIN social_accounts sa ON sa.id = pt.social_account_id
        WHERE pt.due_at <= now() AND pt.status = 'pending'
        ORDER BY pt.due_at LIMIT ${limit}
        FOR UPDATE OF pt, p SKIP LOCKED`.pipe(Effect.orDie, policyRequire("Post", "publish"))

    /**
     * The account's sends in each window, its row locked until the transaction ends: two processes sending
     * for one account take turns at counting.
     */
    const lockUsage = (socialAccountId: SocialAccountId, windows: ReadonlyArray<BudgetWindow>) =>
      Effect.gen(function*() {
        yield* sql`SELECT 1 FROM social_accounts WHERE id = ${socialAccountId} FOR UPDATE`
        const [{ usage }] = yield* sql<{ readonly usage: Usage }>`SELECT ARRAY(
            SELECT (SELECT count(*) FROM publish_attempts a WHERE a.social_account_id = ${socialAccountId}
              AND a.started_at > now() - make_interval(secs => w.seconds::int))::int
            FROM jsonb_array_elements_text(${JSON.stringify(windows.map((window) => window.seconds))}::jsonb)
              WITH ORDINALITY AS w (seconds, n)
            ORDER BY w.n) AS usage`
        return usage
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /** When the `count`th oldest send of the account in the last `seconds` ages out of them. */
    const agesOut = (socialAccountId: SocialAccountId, seconds: number, count: number) =>
      sql<{ readonly at: Date }>`SELECT started_at + make_interval(secs => ${seconds}) AS at FROM publish_attempts
        WHERE social_account_id = ${socialAccountId} AND started_at > now() - make_interval(secs => ${seconds})
        ORDER BY started_at OFFSET ${count - 1} LIMIT 1`.pipe(
        Effect.map(([row]) => row?.at),
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /** The target waits for its account's budget until `at`, and its post says so. */
    const holdBack = (postId: PostId, socialAccountId: SocialAccountId, at: Date) =>
      Effect.gen(function*() {
        yield* sql`UPDATE post_targets SET due_at = ${at}
          WHERE post_id = ${postId} AND social_account_id = ${socialAccountId}`
        yield* sql`UPDATE posts SET updated_at = now(),
            waiting_until = CASE WHEN waiting_until > now() THEN greatest(waiting_until, ${at}) ELSE ${at} END
          WHERE id = ${postId}`
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /** A scheduled post's first target is being sent: it is publishing, and waits no more for what has passed. */
    const begin = (postId: PostId) =>
      sql`UPDATE posts SET updated_at = now(), status = CASE WHEN status = 'scheduled' THEN 'publishing' ELSE status END,
          waiting_until = CASE WHEN waiting_until > now() THEN waiting_until END
        WHERE id = ${postId}`.pipe(Effect.asVoid, Effect.orDie, policyRequire("Post", "publish"))

    /** Targets due and not yet taken, in all processes, and how long the oldest has waited. */
    const backlog = sql<{ readonly due: number; readonly oldestDueSeconds: number | null }>`SELECT count(*)::int AS due,
        extract(epoch FROM clock_timestamp() - min(due_at))::float8 AS "oldestDueSeconds"
      FROM post_targets WHERE due_at <= clock_timestamp()`.pipe(Effect.map(([row]) => row), Effect.orDie)

    return { claimDue, lockUsage, agesOut, holdBack, begin, backlog } as const
  })
}) {}
