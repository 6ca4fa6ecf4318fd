import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A presigned upload's claim (`receiving`, `completing`) lasts until `claimed_until`, which the process doing the
 * work keeps moving ahead: a process that died leaves a claim that lapses, and the upload can be sent, completed
 * or cancelled again. A claim without a time (made before this column) counts as lapsed.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE asset_uploads ADD COLUMN claimed_until timestamptz(3)`
})
