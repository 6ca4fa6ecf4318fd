import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * An attempt can end without an answer (`unknown`: the send timed out, or its process died, so it may have gone
 * out), and the unfinished attempts whose time is up are found by when they started. A target sent again after
 * it failed counts its attempts from there (`attempts_before`: those of its earlier publishes).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE publish_attempts DROP CONSTRAINT publish_attempts_result_check`
  yield* sql`ALTER TABLE publish_attempts ADD CONSTRAINT publish_attempts_result_check
    CHECK (result IN ('published', 'failed', 'unknown'))`
  yield* sql`ALTER TABLE post_targets ADD COLUMN attempts_before integer NOT NULL DEFAULT 0`
  yield* sql`CREATE INDEX publish_attempts_unfinished ON publish_attempts (started_at) WHERE finished_at IS NULL`
})
