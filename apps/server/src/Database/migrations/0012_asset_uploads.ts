import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Presigned uploads waiting for their bytes and their completion. The row is the upload's one-time use: a PUT
 * to the server claims it (`receiving`, then `received`), a completion claims it (`completing`) and deletes it.
 * Its object's key is in `storage_garbage` from the start, so that the bytes of one never completed are swept.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE asset_uploads (
      id uuid PRIMARY KEY,
      team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      size bigint NOT NULL CHECK (size > 0),
      sha256 text,
      fields jsonb NOT NULL,
      storage_key text NOT NULL UNIQUE,
      expires_at timestamptz(3) NOT NULL,
      state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'receiving', 'received', 'completing')),
      created_at timestamptz(3) NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX asset_uploads_team_expires_at ON asset_uploads (team_id, expires_at)`
  yield* sql`CREATE INDEX asset_uploads_organization_expires_at ON asset_uploads (organization_id, expires_at)`
})
