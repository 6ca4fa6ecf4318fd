import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A target remembers whether its publish was scheduled, so that a send taken over by the recovery (its process
 * died, or its answer never came) keeps its publish's rules: a scheduled target's failure that may pass is tried
 * again, up to `SCHEDULE_MAX_ATTEMPTS`; a post-now's ends the target. Targets pending before this migration count
 * as scheduled when they wait for a time or their post has one (a post-now after an earlier schedule of the same
 * post, in flight across the upgrade, is then tried again rather than failed).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE post_targets ADD COLUMN scheduled boolean NOT NULL DEFAULT false`
  yield* sql`UPDATE post_targets pt SET scheduled = true FROM posts p
    WHERE p.id = pt.post_id AND pt.status = 'pending' AND (pt.due_at IS NOT NULL OR p.scheduled_at IS NOT NULL)`
})
