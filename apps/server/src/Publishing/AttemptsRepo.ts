import { SqlClient } from "@effect/sql"
import type { OrganizationId, PostId, PublishError, SocialAccountId, TeamId } from "@postline/domain"
import { Effect } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { insertEventsOf } from "../EventWebhooks/Repo.js"
import type { ProviderName } from "../Providers/Credentials.js"
import type { Published } from "../Providers/SocialProvider.js"
import { snapshotOffsetsSeconds } from "../Analytics/Schedule.js"
import { attemptsBefore } from "./TargetsRepo.js"

/**
 * How an attempt ended: published; failed; or in doubt, the provider's answer never came (it may have
 * published), which a later attempt with the same provider key resolves.
 */
export type AttemptOutcome =
  | {
    readonly _tag: "Published"
    readonly published: Published
    /** Credits of what was held and not published (a first comment the network refused): given back. */
    readonly unspent?: number
  }
  | { readonly _tag: "Failed"; readonly error: PublishError }
  | { readonly _tag: "InDoubt"; readonly error: PublishError }

/** An attempt at a target and what sending it needs: its post, team, organization and the credits it holds. */
export interface AttemptToSend {
  readonly postId: PostId
  readonly socialAccountId: SocialAccountId
  readonly teamId: TeamId
  readonly organizationId: OrganizationId
  /** The account's provider; null once the account is removed. */
  readonly provider: ProviderName | null
  readonly content: string
  readonly linkTracking: boolean | null
  readonly creditsReserved: number
  /** The attempt left unfinished. */
  readonly attempt: number
  /** Which attempt of its publish it is: 1 for the first. */
  readonly ordinal: number
}

/**
 * An unfinished attempt the recovery takes over, and whether its target's publish was scheduled: it is sent
 * again under its publish's rules (a scheduled target's failure that may pass is tried again after a backoff).
 */
export interface AbandonedAttempt extends AttemptToSend {
  readonly scheduled: boolean
}

/** What an attempt that never got its answer (its send timed out, or its process stopped) records. */
export const unansweredMessage = "No answer: the attempt was cut short (its send timed out, or its server process stopped)"

/** An attempt started: its number, and which attempt of its publish it is (1 for the first). */
export interface Started {
  readonly attempt: number
  readonly ordinal: number
}

/**
 * Records the next attempt at the target, a publish or a delete, numbered after every earlier one of either kind,
 * with the account's provider as it is now; answers its number.
 */
export const insertAttempt = (
  sql: SqlClient.SqlClient,
  postId: PostId,
  socialAccountId: SocialAccountId,
  kind: "publish" | "delete"
) =>
  Effect.map(
    sql<{ readonly attempt: number }>`INSERT INTO publish_attempts (post_id, social_account_id, attempt, provider, kind)
      SELECT ${postId}, ${socialAccountId}, coalesce(max(attempt), 0) + 1,
        (SELECT provider FROM social_accounts WHERE id = ${socialAccountId}), ${kind}
      FROM publish_attempts WHERE post_id = ${postId} AND social_account_id = ${socialAccountId}
      RETURNING attempt`,
    ([row]) => row.attempt
  )

/**
 * Attempts: each call of a provider, recorded before it is made and after it answers (with its target's end
 * or wait), so that a publish, a scheduled one or one run again after a crash follows one path.
 */
export class AttemptsRepo extends Effect.Service<AttemptsRepo>()("AttemptsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * The target is being sent: pending with its credits held (and no longer due), and a new attempt started;
     * `scheduled` says whose rules its publish follows (a post-now's, or a schedule's when the recovery sends again).
     */
    const startAttempt = (postId: PostId, socialAccountId: SocialAccountId, creditsReserved: number, scheduled: boolean) =>
      Effect.gen(function*() {
        const [{ before }] = yield* sql<{ readonly before: number }>`INSERT INTO post_targets
            (post_id, social_account_id, status, credits_reserved, scheduled)
          VALUES (${postId}, ${socialAccountId}, 'pending', ${creditsReserved}, ${scheduled})
          ON CONFLICT (post_id, social_account_id) DO UPDATE SET status = 'pending', external_id = NULL, url = NULL,
            published_at = NULL, error_category = NULL, error_message = NULL, error_retryable = NULL,
            credits_reserved = EXCLUDED.credits_reserved, credits_spent = 0, attempts_before = ${attemptsBefore(sql)},
            due_at = NULL, scheduled = EXCLUDED.scheduled, updated_at = now()
          RETURNING attempts_before AS before`
        const attempt = yield* insertAttempt(sql, postId, socialAccountId, "publish")
        return { attempt, ordinal: attempt - before } satisfies Started
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /**
     * Records how the attempt ended, on the attempt (with `summary`, the provider's answer in short) and on its
     * target (in doubt: failed, for good), if nobody else has: true when this call did, and may settle the
     * attempt's credits; a success spends what was held. The target's end is also an event for its
     * organization's event webhook, if it has one, recorded in the same statement.
     */
    const finishAttempt = (
      postId: PostId,
      socialAccountId: SocialAccountId,
      attempt: number,
      outcome: AttemptOutcome,
      summary: string
    ) =>
      Effect.gen(function*() {
        const published = outcome._tag === "Published" ? outcome.published : undefined
        const error = outcome._tag === "Published" ? undefined : outcome.error
        const unspent = outcome._tag === "Published" ? outcome.unspent ?? 0 : 0
        const result = outcome._tag === "Published" ? "published" : outcome._tag === "Failed" ? "failed" : "unknown"
        // A published target's first analytics read; a webhook has none to read, so its target is never due.
        const analyticsDue = published
          ? sql`CASE WHEN (SELECT provider FROM social_accounts WHERE id = ${socialAccountId}) <> 'webhook'
              THEN now() + make_interval(secs => ${snapshotOffsetsSeconds[0]!}) END`
          : null
        // One statement: the attempt, its target only if this finished the attempt, and the event of its end.
        const finished = yield* sql`WITH finished AS (
            UPDATE publish_attempts SET finished_at = now(), result = ${result},
              external_id = ${published?.externalId ?? null}, error_category = ${error?.category ?? null},
              error_message = ${error?.message ?? null}, summary = ${summary}
            WHERE post_id = ${postId} AND social_account_id = ${socialAccountId} AND attempt = ${attempt}
              AND finished_at IS NULL RETURNING attempt),
          ended AS (
            UPDATE post_targets SET status = ${published ? "published" : "failed"},
              external_id = ${published?.externalId ?? null}, url = ${published?.url ?? null},
              published_at = ${published ? sql`now()` : null},
              analytics_due_at = ${analyticsDue},
              error_category = ${error?.category ?? null}, error_message = ${error?.message ?? null},
              error_retryable = ${error?.retryable ?? null},
              credits_spent = ${published ? sql`credits_reserved - ${unspent}` : 0}, credits_reserved = 0, updated_at = now()
            WHERE post_id = ${postId} AND social_account_id = ${socialAccountId} AND EXISTS (SELECT 1 FROM finished)
            RETURNING *),
          events AS (${insertEventsOf(sql, "ended")})
          SELECT 1 FROM ended`
        return finished.length > 0
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /**
     * A failed attempt that will be tried again in `delaySeconds`: the target stays pending, its credits held,
     * its error shown, and is due then. False when the attempt was finished by another.
     */
    const recordRetry = (
      postId: PostId,
      socialAccountId: SocialAccountId,
      attempt: number,
      error: PublishError,
      summary: string,
      delaySeconds: number
    ) =>
      Effect.gen(function*() {
        const finished = yield* sql`UPDATE publish_attempts SET finished_at = now(), result = 'failed',
            error_category = ${error.category}, error_message = ${error.message}, summary = ${summary}
          WHERE post_id = ${postId} AND social_account_id = ${socialAccountId} AND attempt = ${attempt}
            AND finished_at IS NULL RETURNING attempt`
        if (finished.length === 0) return false
        yield* showError(postId, socialAccountId, error)
        yield* sql`UPDATE post_targets SET due_at = now() + make_interval(secs => ${delaySeconds})
          WHERE post_id = ${postId} AND social_account_id = ${socialAccountId} AND status = 'pending'`
        return true
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    const showError = (postId: PostId, socialAccountId: SocialAccountId, error: PublishError) =>
      sql`UPDATE post_targets SET error_category = ${error.category}, error_message = ${error.message},
          error_retryable = ${error.retryable}, updated_at = now()
        WHERE post_id = ${postId} AND social_account_id = ${socialAccountId} AND status = 'pending'`

    /**
     * The send got no answer in time: the attempt stays unfinished, its target pending with its credits held
     * and the error shown, until the attempt's time is up and the recovery (Recovery.ts) tries again.
     */
    const leaveInDoubt = (postId: PostId, socialAccountId: SocialAccountId, error: PublishError) =>
      showError(postId, socialAccountId, error).pipe(Effect.asVoid, Effect.orDie, policyRequire("Post", "publish"))

    /** The database's clock, which attempts are timed by. */
    const now = sql<{ readonly now: Date }>`SELECT now() AS now`.pipe(Effect.map(([row]) => row.now), Effect.orDie)

    /**
     * Up to `limit` attempts unfinished for `seconds`, or since before `leftBefore` (their process died, or their
     * send is in doubt), locked until the caller's transaction ends; those that others have locked are skipped.
     */
    const abandonedAttempts = (seconds: number, limit: number, leftBefore: Date | null) =>
      sql<AbandonedAttempt>`SELECT a.post_id AS "postId", a.social_account_id AS "socialAccountId",
          p.team_id AS "teamId", t.organization_id AS "organizationId", a.provider, p.content,
          p.link_tracking AS "linkTracking", pt.credits_reserved AS "creditsReserved", a.attempt,
          a.attempt - pt.attempts_before AS ordinal, pt.scheduled
        FROM publish_attempts a
          JOIN post_targets pt ON pt.post_id = a.post_id AND pt.social_account_id = a.social_account_id
          JOIN posts p ON p.id = a.post_id JOIN teams t ON t.id = p.team_id
        WHERE a.kind = 'publish' AND a.finished_at IS NULL AND (a.started_at < now() - make_interval(secs => ${seconds})
          OR a.started_at < ${leftBefore})
        ORDER BY a.started_at LIMIT ${limit} FOR UPDATE OF a SKIP LOCKED`.pipe(
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /** Ends an attempt that got no answer, its target left pending for the next one. */
    const endUnanswered = (postId: PostId, socialAccountId: SocialAccountId, attempt: number) =>
      sql`UPDATE publish_attempts SET finished_at = now(), result = 'unknown', error_category = 'transient',
          error_message = ${unansweredMessage}, summary = ${unansweredMessage}
        WHERE post_id = ${postId} AND social_account_id = ${socialAccountId} AND attempt = ${attempt}
          AND finished_at IS NULL`.pipe(Effect.asVoid, Effect.orDie, policyRequire("Post", "publish"))

    return {
      startAttempt,
      finishAttempt,
      recordRetry,
      leaveInDoubt,
      now,
      abandonedAttempts,
      endUnanswered
    } as const
  })
}) {}
