import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Scheduled posts: when each is due, and the version of its schedule, which
 * a new schedule (or none) moves on so that an older execution finds itself
 * outdated; and each post's own choice of link tracking.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE posts DROP CONSTRAINT posts_status_check`
  yield* sql`
    ALTER TABLE posts
      ADD CONSTRAINT posts_status_check
        CHECK (status IN ('draft', 'scheduled', 'publishing', 'published', 'partially_published', 'failed')),
      ADD COLUMN scheduled_at timestamptz(3),
      ADD COLUMN schedule_version integer NOT NULL DEFAULT 0,
      ADD COLUMN link_tracking boolean`
  // The queue's order: by when, posts that are not scheduled last.
  yield* sql`CREATE INDEX posts_team_scheduled_at ON posts (team_id, coalesce(scheduled_at, 'infinity'), id)`
  yield* sql`CREATE INDEX posts_scheduled ON posts (scheduled_at) WHERE status = 'scheduled'`
})
