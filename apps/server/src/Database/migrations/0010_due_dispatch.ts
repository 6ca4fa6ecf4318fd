import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Scheduled work is found by its due time: a target waiting to be sent (at its post's time, after a backoff,
 * or once its account's rate budget allows) carries `due_at`, and the processes claim due targets in
 * batches. A post held back by a budget says until when. The durable workflow engine's tables go: what
 * they held is carried over as due times here.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE post_targets ADD COLUMN due_at timestamptz(3)`
  yield* sql`ALTER TABLE posts ADD COLUMN waiting_until timestamptz(3)`
  yield* sql`CREATE INDEX post_targets_due ON post_targets (due_at) WHERE due_at IS NOT NULL`
  // Posts publishing: those whose targets have all ended are brought up to date by the recovery.
  yield* sql`CREATE INDEX posts_publishing ON posts (id) WHERE status = 'publishing'`
  // An account's sends in the last day, to keep within its provider's rate budget.
  yield* sql`CREATE INDEX publish_attempts_account_started ON publish_attempts (social_account_id, started_at)`
  // Targets waiting for their schedule, and those between attempts (due at once: their backoff was in the engine).
  yield* sql`UPDATE post_targets pt SET due_at = CASE WHEN p.status = 'scheduled' THEN p.scheduled_at ELSE now() END
    FROM posts p
    WHERE p.id = pt.post_id AND pt.status = 'pending' AND p.scheduled_at IS NOT NULL
      AND p.status IN ('scheduled', 'publishing')
      AND NOT EXISTS (SELECT 1 FROM publish_attempts a
        WHERE a.post_id = pt.post_id AND a.social_account_id = pt.social_account_id AND a.finished_at IS NULL)`
  yield* sql`DROP TABLE IF EXISTS cluster_messages, cluster_replies, cluster_runners, cluster_locks`
})
