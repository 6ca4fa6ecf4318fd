import { SqlClient } from "@effect/sql"
import type { OrganizationId, PostId, PublishError, SocialAccountId, TargetStatus, TeamId } from "@postline/domain"
import { Effect } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { insertEventsOf } from "../EventWebhooks/Repo.js"
import { insertAttempt } from "./AttemptsRepo.js"

/** How taking a post down from an account ended: done, or refused (the target stays published). */
export type DeleteOutcome = { readonly _tag: "Deleted" } | { readonly _tag: "Failed"; readonly error: PublishError }

/** A delete whose attempt no process is finishing (its process died, or the network did not answer in time). */
export interface AbandonedDelete {
  readonly postId: PostId
  readonly socialAccountId: SocialAccountId
  readonly teamId: TeamId
  readonly organizationId: OrganizationId
  readonly attempt: number
  /** Which delete attempt of the target it is: 1 for the first. */
  readonly ordinal: number
}

/**
 * Taking published posts down: a target is deleting from the moment its delete attempt starts (in the
 * transaction that checked it was published, the post locked), so that one delete runs per target whichever
 * process asked; and deleted, with the event of it, in the statement that finishes the attempt.
 */
export class DeletionsRepo extends Effect.Service<DeletionsRepo>()("DeletionsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const statusesOf = (postId: PostId) =>
      sql<{ readonly socialAccountId: SocialAccountId; readonly status: TargetStatus }>`SELECT
          social_account_id AS "socialAccountId", status FROM post_targets WHERE post_id = ${postId}
        ORDER BY created_at, social_account_id`.pipe(Effect.orDie, policyRequire("Post", "publish"))

    /** The published target is deleting, under a new delete attempt: answers the attempt's number. */
    const startDelete = (postId: PostId, socialAccountId: SocialAccountId) =>
      Effect.gen(function*() {
        yield* sql`UPDATE post_targets SET status = 'deleting', updated_at = now()
          WHERE post_id = ${postId} AND social_account_id = ${socialAccountId} AND status IN ('published', 'deleting')`
        return yield* insertAttempt(sql, postId, socialAccountId, "delete")
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /**
     * Finishes the delete attempt, if nobody else has, and its target: deleted (no longer read for analytics,
     * and the organization's event webhook told, in the same statement), or published again when refused.
     * True when this call finished it.
     */
    const finishDelete = (
      postId: PostId,
      socialAccountId: SocialAccountId,
      attempt: number,
      outcome: DeleteOutcome,
      summary: string
    ) =>
      Effect.gen(function*() {
        const deleted = outcome._tag === "Deleted"
        const error = outcome._tag === "Failed" ? outcome.error : undefined
        const finished = yield* sql`WITH finished AS (
            UPDATE publish_attempts SET finished_at = now(), result = ${deleted ? "deleted" : "failed"},
              error_category = ${error?.category ?? null}, error_message = ${error?.message ?? null}, summary = ${summary}
            WHERE post_id = ${postId} AND social_account_id = ${socialAccountId} AND attempt = ${attempt}
              AND kind = 'delete' AND finished_at IS NULL RETURNING attempt),
          ended AS (
            UPDATE post_targets SET status = ${deleted ? "deleted" : "published"},
              deleted_at = ${deleted ? sql`now()` : null},
              analytics_due_at = ${deleted ? null : sql`analytics_due_at`}, updated_at = now()
            WHERE post_id = ${postId} AND social_account_id = ${socialAccountId} AND status = 'deleting'
              AND EXISTS (SELECT 1 FROM finished)
            RETURNING *),
          taken_down AS (SELECT * FROM ended WHERE status = 'deleted'),
          events AS (${insertEventsOf(sql, "taken_down")})
          SELECT 1 FROM ended`
        return finished.length > 0
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /** Up to `limit` delete attempts unfinished for `seconds`, or since before `leftBefore`, locked until the transaction ends. */
    const abandonedDeletes = (seconds: number, limit: number, leftBefore: Date | null) =>
      sql<AbandonedDelete>`SELECT a.post_id AS "postId", a.social_account_id AS "socialAccountId",
          p.team_id AS "teamId", t.organization_id AS "organizationId", a.attempt,
          (SELECT count(*)::int FROM publish_attempts d WHERE d.post_id = a.post_id
            AND d.social_account_id = a.social_account_id AND d.kind = 'delete') AS ordinal
        FROM publish_attempts a JOIN posts p ON p.id = a.post_id JOIN teams t ON t.id = p.team_id
        WHERE a.kind = 'delete' AND a.finished_at IS NULL AND (a.started_at < now() - make_interval(secs => ${seconds})
          OR a.started_at < ${leftBefore})
        ORDER BY a.started_at LIMIT ${limit} FOR UPDATE OF a SKIP LOCKED`.pipe(
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /**
     * The targets whose delete began at or after `since` (of `accountIds`, when given), in the order of the post's
     * targets, with how their last delete attempt ended: what an unpublish that began then came to.
     */
    const deletedSince = (postId: PostId, accountIds: ReadonlyArray<SocialAccountId> | undefined, since: Date) =>
      sql<{
        readonly socialAccountId: SocialAccountId
        readonly status: TargetStatus
        readonly errorCategory: PublishError["category"] | null
        readonly errorMessage: string | null
      }>`SELECT t.social_account_id AS "socialAccountId", t.status, a.error_category AS "errorCategory",
          a.error_message AS "errorMessage"
        FROM post_targets t JOIN LATERAL (SELECT * FROM publish_attempts a WHERE a.post_id = t.post_id
          AND a.social_account_id = t.social_account_id AND a.kind = 'delete' AND a.started_at >= ${since}
          ORDER BY a.attempt DESC LIMIT 1) a ON TRUE
        WHERE t.post_id = ${postId}
          ${accountIds === undefined ? sql`` : sql`AND t.social_account_id IN ${sql.in(accountIds)}`}
        ORDER BY t.created_at, t.social_account_id`.pipe(Effect.orDie, policyRequire("Post", "publish"))

    return { statusesOf, startDelete, finishDelete, abandonedDeletes, deletedSince } as const
  })
}) {}
