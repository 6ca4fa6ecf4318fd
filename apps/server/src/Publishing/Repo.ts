import { SqlClient } from "@effect/sql"
import type { PostId, PublishError, SocialAccountId, TargetStatus } from "@postline/domain"
import { Effect } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import type { Published } from "../Providers/SocialProvider.js"

/** A target as a new publish finds it; `stale`: pending, with its last attempt long started (its process died). */
export interface TargetState {
  readonly socialAccountId: SocialAccountId
  readonly status: TargetStatus
  readonly stale: boolean
}

/** How an attempt ended. */
export type AttemptOutcome =
  | { readonly _tag: "Published"; readonly published: Published }
  | { readonly _tag: "Failed"; readonly error: PublishError }

// Longer than a publish may take: a target pending this long was left by a process that died.
const staleAfterSeconds = 5 * 60

/**
 * Targets (what became of a post on each account) and attempts (each call of
 * a provider, recorded before it is made and after it answers), so that a
 * publish, a scheduled one or one run again after a crash follows one path.
 */
export class PublishingRepo extends Effect.Service<PublishingRepo>()("PublishingRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const targetsOf = (postId: PostId, ids: ReadonlyArray<SocialAccountId>) =>
      sql<TargetState>`SELECT t.social_account_id AS "socialAccountId", t.status,
          t.status = 'pending' AND coalesce((SELECT max(a.started_at) FROM publish_attempts a
            WHERE a.post_id = t.post_id AND a.social_account_id = t.social_account_id)
            < now() - make_interval(secs => ${staleAfterSeconds}), true) AS stale
        FROM post_targets t WHERE t.post_id = ${postId} AND t.social_account_id IN ${sql.in(ids)}`.pipe(
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /** A target failed before anything was sent (a text the provider would refuse, credentials it refused). */
    const failBeforeSending = (postId: PostId, socialAccountId: SocialAccountId, error: PublishError) =>
      sql`INSERT INTO post_targets (post_id, social_account_id, status, error_category, error_message, error_retryable)
        VALUES (${postId}, ${socialAccountId}, 'failed', ${error.category}, ${error.message}, ${error.retryable})
        ON CONFLICT (post_id, social_account_id) DO UPDATE SET status = 'failed', external_id = NULL, url = NULL,
          published_at = NULL, error_category = EXCLUDED.error_category, error_message = EXCLUDED.error_message,
          error_retryable = EXCLUDED.error_retryable, credits_reserved = 0, credits_spent = 0, updated_at = now()`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /** The target is being sent: pending with its credits held, and a new attempt started. Answers its number. */
    const startAttempt = (postId: PostId, socialAccountId: SocialAccountId, creditsReserved: number) =>
      Effect.gen(function*() {
        yield* sql`INSERT INTO post_targets (post_id, social_account_id, status, credits_reserved)
          VALUES (${postId}, ${socialAccountId}, 'pending', ${creditsReserved})
          ON CONFLICT (post_id, social_account_id) DO UPDATE SET status = 'pending', external_id = NULL, url = NULL,
            published_at = NULL, error_category = NULL, error_message = NULL, error_retryable = NULL,
            credits_reserved = EXCLUDED.credits_reserved, credits_spent = 0, updated_at = now()`
        const [{ attempt }] = yield* sql<{ readonly attempt: number }>`INSERT INTO publish_attempts
            (post_id, social_account_id, attempt)
          SELECT ${postId}, ${socialAccountId}, coalesce(max(attempt), 0) + 1 FROM publish_attempts
          WHERE post_id = ${postId} AND social_account_id = ${socialAccountId}
          RETURNING attempt`
        return attempt
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /** Records how the attempt ended, on the attempt and on its target; a success spends what was held. */
    const finishAttempt = (postId: PostId, socialAccountId: SocialAccountId, attempt: number, outcome: AttemptOutcome) =>
      Effect.gen(function*() {
        const published = outcome._tag === "Published" ? outcome.published : undefined
        const error = outcome._tag === "Failed" ? outcome.error : undefined
        yield* sql`UPDATE publish_attempts SET finished_at = now(), result = ${published ? "published" : "failed"},
            external_id = ${published?.externalId ?? null}, error_category = ${error?.category ?? null},
            error_message = ${error?.message ?? null}
          WHERE post_id = ${postId} AND social_account_id = ${socialAccountId} AND attempt = ${attempt}`
        yield* sql`UPDATE post_targets SET status = ${published ? "published" : "failed"},
            external_id = ${published?.externalId ?? null}, url = ${published?.url ?? null},
            published_at = ${published ? sql`now()` : null},
            error_category = ${error?.category ?? null}, error_message = ${error?.message ?? null},
            error_retryable = ${error?.retryable ?? null},
            credits_spent = ${published ? sql`credits_reserved` : 0}, credits_reserved = 0, updated_at = now()
          WHERE post_id = ${postId} AND social_account_id = ${socialAccountId}`
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /** A failed attempt that will be tried again: the target stays pending, its credits held, its error shown. */
    const recordRetry = (postId: PostId, socialAccountId: SocialAccountId, attempt: number, error: PublishError) =>
      Effect.gen(function*() {
        yield* sql`UPDATE publish_attempts SET finished_at = now(), result = 'failed',
            error_category = ${error.category}, error_message = ${error.message}
          WHERE post_id = ${postId} AND social_account_id = ${socialAccountId} AND attempt = ${attempt}`
        yield* sql`UPDATE post_targets SET error_category = ${error.category}, error_message = ${error.message},
            error_retryable = true, updated_at = now()
          WHERE post_id = ${postId} AND social_account_id = ${socialAccountId}`
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /** Targets waiting for a scheduled time (pending, never attempted), with the credits they hold. */
    const waitingTargets = (postId: PostId) =>
      sql<{ readonly socialAccountId: SocialAccountId; readonly creditsReserved: number }>`SELECT
          t.social_account_id AS "socialAccountId", t.credits_reserved AS "creditsReserved"
        FROM post_targets t WHERE t.post_id = ${postId} AND t.status = 'pending'
          AND NOT EXISTS (SELECT 1 FROM publish_attempts a
            WHERE a.post_id = t.post_id AND a.social_account_id = t.social_account_id)`.pipe(
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /** Targets to wait for a scheduled time: pending, their credits held, no attempt yet. */
    const awaitTarget = (postId: PostId, socialAccountId: SocialAccountId, creditsReserved: number) =>
      sql`INSERT INTO post_targets (post_id, social_account_id, status, credits_reserved)
        VALUES (${postId}, ${socialAccountId}, 'pending', ${creditsReserved})
        ON CONFLICT (post_id, social_account_id) DO UPDATE SET status = 'pending', external_id = NULL, url = NULL,
          published_at = NULL, error_category = NULL, error_message = NULL, error_retryable = NULL,
          credits_reserved = EXCLUDED.credits_reserved, credits_spent = 0, updated_at = now()`.pipe(
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

    /** The post waits for `scheduledAt` under a new schedule version, which it answers. */
    const markScheduled = (postId: PostId, scheduledAt: Date) =>
      sql<{ readonly version: number }>`UPDATE posts SET status = 'scheduled', scheduled_at = ${scheduledAt},
          schedule_version = schedule_version + 1, updated_at = now()
        WHERE id = ${postId} RETURNING schedule_version AS version`.pipe(
        Effect.map(([row]) => row.version),
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /** The post no longer waits: a new version outdates the execution that would have published it. */
    const clearSchedule = (postId: PostId) =>
      sql`UPDATE posts SET scheduled_at = NULL, schedule_version = schedule_version + 1, updated_at = now()
        WHERE id = ${postId}`.pipe(Effect.asVoid, Effect.orDie, policyRequire("Post", "publish"))

    /** The post's status, as its targets say: publishing while any is pending, then how they turned out. */
    const refreshStatus = (postId: PostId) =>
      sql`UPDATE posts p SET updated_at = now(), status = (
          SELECT CASE
            WHEN count(*) = 0 THEN 'draft'
            WHEN p.status = 'scheduled' AND p.scheduled_at IS NOT NULL THEN 'scheduled'
            WHEN bool_or(t.status = 'pending') THEN 'publishing'
            WHEN bool_and(t.status = 'published') THEN 'published'
            WHEN bool_and(t.status = 'failed') THEN 'failed'
            ELSE 'partially_published' END
          FROM post_targets t WHERE t.post_id = p.id)
        WHERE p.id = ${postId}`.pipe(Effect.asVoid, Effect.orDie, policyRequire("Post", "publish"))

    return {
      targetsOf,
      failBeforeSending,
      startAttempt,
      finishAttempt,
      recordRetry,
      waitingTargets,
      awaitTarget,
      dropTarget,
      markScheduled,
      clearSchedule,
      refreshStatus
    } as const
  })
}) {}
