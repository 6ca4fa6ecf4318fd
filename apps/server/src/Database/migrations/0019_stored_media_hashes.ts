import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * An asset keeps the hash of its stored copy (`stored_sha256`), the bytes its URL serves and a webhook's
 * `sha256` describes, beside that of the bytes as uploaded (`sha256`, which finds a repeated upload): an image is
 * stored rewritten (upright, without metadata, HEIC as JPEG). Videos and GIFs have always been stored as they came,
 * so theirs is known; an older image's is read from storage the first time a post sends it (Publishing).
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE assets ADD COLUMN stored_sha256 text`
  yield* sql`UPDATE assets SET stored_sha256 = sha256 WHERE kind = 'video' OR content_type = 'image/gif'`
})
