import { SqlClient } from "@effect/sql"
import type {
  FirstCommentResult,
  PostId,
  PublishedPart,
  PublishError,
  SocialAccountId,
  TargetStatus
} from "@postline/domain"
import { Effect } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { insertEventsOf } from "../EventWebhooks/Repo.js"
import { targetFirstCommentJson, targetPartsJson } from "../Posts/BodyColumns.js"

/** A target as its publish's answer shows it. */
export interface TargetResult {
  readonly socialAccountId: SocialAccountId
  readonly status: TargetStatus
  readonly externalId: string | null
  readonly url: string | null
  readonly errorCategory: PublishError["category"] | null
  readonly errorMessage: string | null
  readonly errorRetryable: boolean | null
  readonly creditsSpent: number
  readonly parts: ReadonlyArray<PublishedPart>
  readonly firstComment: FirstCommentResult | null
  readonly updatedAt: Date
}

/**
 * Its earlier attempts, when a target that had ended (failed) is made pending again: a new publish counts
 * its attempts from there. A target still pending keeps its count.
 */
export const attemptsBefore = (sql: SqlClient.SqlClient) =>
  sql`CASE WHEN post_targets.status = 'pending' THEN post_targets.attempts_before
    ELSE (SELECT coalesce(max(a.attempt), 0) FROM publish_attempts a
      WHERE a.post_id = post_targets.post_id AND a.social_account_id = post_targets.social_account_id) END`

/**
 * Targets (what became of a post on each account) and the post's status and schedule they make: the checks
 * and holds of a publish or a schedule, and the answer read back.
 */
export class TargetsRepo extends Effect.Service<TargetsRepo>()("TargetsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Of these accounts, those the post was published to or is being sent to (or waits for its time). */
    const busyTargets = (postId: PostId, ids: ReadonlyArray<SocialAccountId>) =>
      sql<{ readonly socialAccountId: SocialAccountId; readonly status: TargetStatus }>`SELECT
          social_account_id AS "socialAccountId", status
        FROM post_targets WHERE post_id = ${postId} AND social_account_id IN ${sql.in(ids)}
          AND status IN ('pending', 'published', 'deleting', 'deleted')`.pipe(Effect.orDie, policyRequire("Post", "publish"))

    /**
     * A target failed before anything was sent (a text the provider would refuse, credentials it refused); its
     * organization's event webhook, if it has one, is told in the same statement.
     */
    const failBeforeSending = (postId: PostId, socialAccountId: SocialAccountId, error: PublishError) =>
      sql`WITH ended AS (
          INSERT INTO post_targets (post_id, social_account_id, status, error_category, error_message, error_retryable)
          VALUES (${postId}, ${socialAccountId}, 'failed', ${error.category}, ${error.message}, ${error.retryable})
          ON CONFLICT (post_id, social_account_id) DO UPDATE SET status = 'failed', external_id = NULL, url = NULL,
            published_at = NULL, error_category = EXCLUDED.error_category, error_message = EXCLUDED.error_message,
            error_retryable = EXCLUDED.error_retryable, credits_reserved = 0, credits_spent = 0, due_at = NULL,
            updated_at = now()
          RETURNING *),
        events AS (${insertEventsOf(sql, "ended")})
        SELECT 1`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Post", "publish")
      )
    /** The targets of these accounts, as a publish's answer shows them. */
    const resultsOf = (postId: PostId, ids: ReadonlyArray<SocialAccountId>) =>
      sql<TargetResult>`SELECT social_account_id AS "socialAccountId", status, external_id AS "externalId", url,
          error_category AS "errorCategory", error_message AS "errorMessage", error_retryable AS "errorRetryable",
          credits_spent AS "creditsSpent", updated_at AS "updatedAt",
          ${sql.literal(targetPartsJson("post_targets"))} AS parts,
          ${sql.literal(targetFirstCommentJson("post_targets"))} AS "firstComment"
        FROM post_targets WHERE post_id = ${postId} AND social_account_id IN ${sql.in(ids)}`.pipe(
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /**
     * The targets of a scheduled post, waiting for its time with their credits held; `sentBefore`: made to
     * wait again after an earlier publish failed them.
     */
    const waitingTargets = (postId: PostId) =>
      sql<{ readonly socialAccountId: SocialAccountId; readonly creditsReserved: number; readonly sentBefore: boolean }>`
        SELECT t.social_account_id AS "socialAccountId", t.credits_reserved AS "creditsReserved",
          t.attempts_before > 0 AS "sentBefore"
        FROM post_targets t WHERE t.post_id = ${postId} AND t.status = 'pending'
          AND NOT EXISTS (SELECT 1 FROM publish_attempts a WHERE a.post_id = t.post_id
            AND a.social_account_id = t.social_account_id AND a.attempt > t.attempts_before)`.pipe(
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /**
     * A target to be sent at a scheduled time: pending, its credits held, no attempt yet, due at `dueAt`, under
     * the scheduled rules; one that failed before keeps its last error on show until it is sent.
     */
    const awaitTarget = (postId: PostId, socialAccountId: SocialAccountId, creditsReserved: number, dueAt: Date) =>
      sql`INSERT INTO post_targets (post_id, social_account_id, status, credits_reserved, due_at, scheduled)
        VALUES (${postId}, ${socialAccountId}, 'pending', ${creditsReserved}, ${dueAt}, true)
        ON CONFLICT (post_id, social_account_id) DO UPDATE SET status = 'pending', external_id = NULL, url = NULL,
          published_at = NULL, credits_reserved = EXCLUDED.credits_reserved, credits_spent = 0,
          attempts_before = ${attemptsBefore(sql)}, due_at = EXCLUDED.due_at, scheduled = true, updated_at = now()`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /** A target that failed before and waited for a schedule that was taken back: failed again, as it was. */
    const stopWaiting = (postId: PostId, socialAccountId: SocialAccountId) =>
      sql`UPDATE post_targets SET status = 'failed', credits_reserved = 0, due_at = NULL, updated_at = now()
        WHERE post_id = ${postId} AND social_account_id = ${socialAccountId}`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    const dropTarget = (postId: PostId, socialAccountId: SocialAccountId) =>
      sql`DELETE FROM post_targets WHERE post_id = ${postId} AND social_account_id = ${socialAccountId}`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /** The post waits for `scheduledAt` under a new schedule version. */
    const markScheduled = (postId: PostId, scheduledAt: Date) =>
      sql`UPDATE posts SET status = 'scheduled', scheduled_at = ${scheduledAt},
          schedule_version = schedule_version + 1, waiting_until = NULL, updated_at = now()
        WHERE id = ${postId}`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /** The post no longer waits for a time: its schedule's version moves on. */
    const clearSchedule = (postId: PostId) =>
      sql`UPDATE posts SET scheduled_at = NULL, schedule_version = schedule_version + 1, waiting_until = NULL,
          updated_at = now()
        WHERE id = ${postId}`.pipe(Effect.asVoid, Effect.orDie, policyRequire("Post", "publish"))

    /**
     * Each post's status, as its targets say: publishing while any is pending, then how they turned out; deleted
     * once none is left published (a target being deleted still is).
     */
    const refreshStatuses = (postIds: ReadonlyArray<PostId>) =>
      sql`UPDATE posts p SET updated_at = now(), status = (
          SELECT CASE
            WHEN count(*) = 0 THEN 'draft'
            WHEN p.status = 'scheduled' AND p.scheduled_at IS NOT NULL THEN 'scheduled'
            WHEN bool_or(t.status = 'pending') THEN 'publishing'
            WHEN bool_and(t.status IN ('published', 'deleting')) THEN 'published'
            WHEN bool_and(t.status = 'failed') THEN 'failed'
            WHEN bool_and(t.status IN ('deleted', 'failed')) THEN 'deleted'
            ELSE 'partially_published' END
          FROM post_targets t WHERE t.post_id = p.id)
        WHERE p.id IN ${sql.in(postIds)}`.pipe(Effect.asVoid, Effect.orDie, policyRequire("Post", "publish"))

    const refreshStatus = (postId: PostId) => refreshStatuses([postId])

    /** Posts still publishing whose targets have all ended (their process died before it said so): brought up to date. */
    const refreshEnded = sql`UPDATE posts p SET updated_at = now(), status = CASE
        WHEN NOT EXISTS (SELECT 1 FROM post_targets t WHERE t.post_id = p.id AND t.status <> 'published') THEN 'published'
        WHEN NOT EXISTS (SELECT 1 FROM post_targets t WHERE t.post_id = p.id AND t.status <> 'failed') THEN 'failed'
        ELSE 'partially_published' END
      WHERE p.status = 'publishing'
        AND EXISTS (SELECT 1 FROM post_targets t WHERE t.post_id = p.id)
        AND NOT EXISTS (SELECT 1 FROM post_targets t WHERE t.post_id = p.id AND t.status = 'pending')`.pipe(
      Effect.asVoid,
      Effect.orDie,
      policyRequire("Post", "publish")
    )

    return {
      busyTargets,
      failBeforeSending,
      resultsOf,
      waitingTargets,
      awaitTarget,
      stopWaiting,
      dropTarget,
      markScheduled,
      clearSchedule,
      refreshStatus,
      refreshStatuses,
      refreshEnded
    } as const
  })
}) {}
