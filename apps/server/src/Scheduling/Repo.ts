import { SqlClient } from "@effect/sql"
import type { OrganizationId, PostId, SocialAccountId, TeamId } from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"

/** A target of a scheduled post as its next attempt finds it, the post locked. */
export interface SendingState {
  readonly version: number
  readonly teamId: TeamId
  readonly organizationId: OrganizationId
  readonly content: string
  /** The post's own link tracking, null to follow its team's default. */
  readonly linkTracking: boolean | null
  readonly targetStatus: "pending" | "published" | "failed"
  readonly creditsReserved: number
  /** An attempt started and never finished: its process died during the provider call. */
  readonly unfinishedAttempt: number | null
}

/** The SQL of scheduled publishing. */
export class SchedulingRepo extends Effect.Service<SchedulingRepo>()("SchedulingRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * The schedule's time has come: the post is publishing, if this version is still its schedule. Answers
     * the targets still to send (all of them, again, when a step runs a second time after a crash).
     */
    const begin = (postId: PostId, version: number) =>
      Effect.gen(function*() {
        const started = yield* sql`UPDATE posts SET status = 'publishing', updated_at = now()
          WHERE id = ${postId} AND schedule_version = ${version} AND status IN ('scheduled', 'publishing')
          RETURNING id`
        if (started.length === 0) return []
        const pending = yield* sql<{ readonly id: SocialAccountId }>`SELECT social_account_id AS id FROM post_targets
          WHERE post_id = ${postId} AND status = 'pending' ORDER BY created_at, social_account_id`
        return pending.map((target) => target.id)
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    const sendingState = (postId: PostId, socialAccountId: SocialAccountId) =>
      sql<SendingState>`SELECT p.schedule_version AS version, p.team_id AS "teamId", t.organization_id AS "organizationId",
          p.content, p.link_tracking AS "linkTracking", pt.status AS "targetStatus", pt.credits_reserved AS "creditsReserved",
          (SELECT a.attempt FROM publish_attempts a
            WHERE a.post_id = pt.post_id AND a.social_account_id = pt.social_account_id AND a.finished_at IS NULL
            ORDER BY a.attempt DESC LIMIT 1) AS "unfinishedAttempt"
        FROM posts p JOIN teams t ON t.id = p.team_id
          JOIN post_targets pt ON pt.post_id = p.id AND pt.social_account_id = ${socialAccountId}
        WHERE p.id = ${postId} FOR UPDATE OF p`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    /** Every schedule that is waiting or under way, to make sure each has its execution. */
    const schedules = sql<{ readonly postId: PostId; readonly version: number; readonly dueAt: number }>`SELECT
        id AS "postId", schedule_version AS version, (extract(epoch FROM scheduled_at) * 1000)::float8 AS "dueAt"
      FROM posts WHERE status IN ('scheduled', 'publishing') AND scheduled_at IS NOT NULL`.pipe(
      Effect.orDie,
      policyRequire("Post", "publish")
    )

    return { begin, sendingState, schedules } as const
  })
}) {}
