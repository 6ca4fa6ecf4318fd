import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The accounts a team publishes to. Credentials are one AES-256-GCM
 * ciphertext (Providers/CredentialsCipher.ts), never in clear; the provider's
 * content limits, read when the credentials were checked, travel beside them.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE social_accounts (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
      provider text NOT NULL CHECK (provider IN ('bluesky', 'mastodon', 'webhook')),
      handle text COLLATE "C" NOT NULL,
      display_name text,
      avatar_url text,
      profile_url text,
      status text NOT NULL DEFAULT 'connected' CHECK (status IN ('connected', 'reconnect_required')),
      last_error_category text,
      last_error_message text,
      last_error_at timestamptz(3),
      credentials text NOT NULL,
      content_limits json NOT NULL,
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      updated_at timestamptz(3) NOT NULL DEFAULT now()
    )`
  for (const column of ["created_at", "updated_at", "handle"]) {
    yield* sql`CREATE INDEX ${sql(`social_accounts_team_${column}`)} ON social_accounts (team_id, ${sql(column)}, id)`
  }
})
