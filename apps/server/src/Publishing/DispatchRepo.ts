import { SqlClient } from "@effect/sql"
import type { PostId, SocialAccountId } from "@postline/domain"
import { Effect } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { decodePublishingAccount, type PublishingAccount, publishingAccountJson } from "../SocialAccounts/PublishingAccount.js"
import type { BudgetWindow } from "../Providers/Budgets.js"
import { lockProviderUsage, providerCalls } from "../Providers/ProviderCalls.js"
import type { AttemptToSend, Started } from "./AttemptsRepo.js"

/** A target whose time has come, locked with its post, and its account: null once the account is removed. */
export type DueTarget = Omit<AttemptToSend, "attempt" | "ordinal"> & { readonly account: PublishingAccount | null }

/** A target of a batch whose attempt was started. */
export type StartedTarget = Pick<AttemptToSend, "postId" | "socialAccountId"> & Started

/**
 * The SQL of due-time dispatch: targets carry when they are next to be sent (`due_at`, indexed), and each
 * process claims those that are due in small batches, skipping what another process has locked.
 */
export class DispatchRepo extends Effect.Service<DispatchRepo>()("DispatchRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Up to `limit` due targets, oldest due first, locked with their posts until the transaction ends. The
     * targets are picked first, by the index alone, so that the rest of the statement reads `limit` rows however
     * many are due.
     */
    const claimDue = (limit: number) =>
      sql<Omit<DueTarget, "account"> & { readonly account: unknown }>`WITH due AS (
          SELECT post_id, social_account_id, due_at FROM post_targets
          WHERE due_at <= now() AND status = 'pending'
          ORDER BY due_at LIMIT ${limit}
          FOR UPDATE SKIP LOCKED)
        SELECT pt.post_id AS "postId", pt.social_account_id AS "socialAccountId",
          p.team_id AS "teamId", t.organization_id AS "organizationId", sa.provider, p.content,
          p.link_tracking AS "linkTracking", pt.credits_reserved AS "creditsReserved",
          CASE WHEN sa.id IS NOT NULL THEN ${publishingAccountJson(sql, "sa")} END AS account
        FROM due JOIN post_targets pt ON pt.post_id = due.post_id AND pt.social_account_id = due.social_account_id
          JOIN posts p ON p.id = pt.post_id JOIN teams t ON t.id = p.team_id
          LEFT JOIN social_accounts sa ON sa.id = pt.social_account_id AND sa.team_id = p.team_id
        ORDER BY due.due_at
        FOR UPDATE OF p SKIP LOCKED`.pipe(
        Effect.orDie,
        Effect.flatMap(Effect.forEach((target) =>
          Effect.map(decodePublishingAccount(target.account), (account): DueTarget => ({ ...target, account }))
        )),
        policyRequire("Post", "publish")
      )

    /** The account's provider calls in each window, its row locked until the transaction ends. */
    const lockUsage = (socialAccountId: SocialAccountId, windows: ReadonlyArray<BudgetWindow>) =>
      lockProviderUsage(sql, socialAccountId, windows).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /**
     * When the `count`th oldest provider call of the account (a send or an analytics read) in the last `seconds`
     * ages out of them. One not yet in the tables is a send of this claim's batch, which starts at the
     * transaction's `now()`.
     */
    const agesOut = (socialAccountId: SocialAccountId, seconds: number, count: number) =>
      sql<{ readonly at: Date }>`SELECT coalesce((SELECT c.at FROM ${providerCalls(sql, socialAccountId)} c
          WHERE c.at > now() - make_interval(secs => ${seconds})
          ORDER BY c.at OFFSET ${count - 1} LIMIT 1), now()) + make_interval(secs => ${seconds}) AS at`.pipe(
        Effect.map(([row]) => row.at),
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

    /**
     * Starts an attempt at each target, in one statement: no longer due, its last error cleared, and its post
     * publishing, no longer waiting for what has passed.
     */
    const startAll = (due: ReadonlyArray<Pick<DueTarget, "postId" | "socialAccountId">>) =>
      sql<StartedTarget>`WITH due AS (
          SELECT * FROM jsonb_to_recordset(${JSON.stringify(due)}::jsonb) AS d ("postId" uuid, "socialAccountId" uuid)),
        started AS (
          INSERT INTO publish_attempts (post_id, social_account_id, attempt, provider)
          SELECT d."postId", d."socialAccountId", coalesce((SELECT max(a.attempt) FROM publish_attempts a
            WHERE a.post_id = d."postId" AND a.social_account_id = d."socialAccountId"), 0) + 1,
            (SELECT sa.provider FROM social_accounts sa WHERE sa.id = d."socialAccountId")
          FROM due d
          RETURNING post_id, social_account_id, attempt),
        targets AS (
          UPDATE post_targets pt SET due_at = NULL, error_category = NULL, error_message = NULL, error_retryable = NULL,
            updated_at = now()
          FROM started s WHERE pt.post_id = s.post_id AND pt.social_account_id = s.social_account_id
          RETURNING pt.post_id, pt.social_account_id, pt.attempts_before),
        begun AS (
          UPDATE posts SET updated_at = now(),
            status = CASE WHEN status = 'scheduled' THEN 'publishing' ELSE status END,
            waiting_until = CASE WHEN waiting_until > now() THEN waiting_until END
          WHERE id IN (SELECT post_id FROM started))
        SELECT s.post_id AS "postId", s.social_account_id AS "socialAccountId", s.attempt,
          s.attempt - t.attempts_before AS ordinal
        FROM started s JOIN targets t ON t.post_id = s.post_id AND t.social_account_id = s.social_account_id`.pipe(
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /** Targets due and not yet taken, in all processes, and how long the oldest has waited. */
    const backlog = sql<{ readonly due: number; readonly oldestDueSeconds: number | null }>`SELECT count(*)::int AS due,
        extract(epoch FROM clock_timestamp() - min(due_at))::float8 AS "oldestDueSeconds"
      FROM post_targets WHERE due_at <= clock_timestamp()`.pipe(Effect.map(([row]) => row), Effect.orDie)

    return { claimDue, lockUsage, agesOut, holdBack, startAll, backlog } as const
  })
}) {}
