import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Organization API keys, device-authorization logins (RFC 8628) with their
 * rotating refresh tokens, and the agent's saved default organization and
 * team. Every secret is stored as its SHA-256 hash only.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE api_keys (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text COLLATE "C" NOT NULL,
      prefix text NOT NULL,
      key_hash text NOT NULL UNIQUE,
      created_by_user_id uuid NOT NULL REFERENCES users (id),
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      expires_at timestamptz(3),
      last_used_at timestamptz(3),
      revoked_at timestamptz(3)
    )`
  for (const column of ["created_at", "name"]) {
    yield* sql`CREATE INDEX ${sql(`api_keys_organization_${column}`)} ON api_keys (organization_id, ${sql(column)}, id)`
  }

  // A login is what one device-flow approval grants; revoking it ends its access and refresh tokens.
  yield* sql`
    CREATE TABLE logins (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      client_id text NOT NULL,
      scope text,
      created_at timestamptz(3) NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX logins_user ON logins (user_id)`
  yield* sql`
    ALTER TABLE access_tokens
      ADD COLUMN login_id uuid REFERENCES logins (id) ON DELETE CASCADE,
      ADD COLUMN expires_at timestamptz(3)`
  yield* sql`CREATE INDEX access_tokens_login ON access_tokens (login_id)`
  // A rotated refresh token is kept, so that presenting it again is recognised as reuse.
  yield* sql`
    CREATE TABLE refresh_tokens (
      token_hash text PRIMARY KEY,
      login_id uuid NOT NULL REFERENCES logins (id) ON DELETE CASCADE,
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      expires_at timestamptz(3) NOT NULL,
      rotated_at timestamptz(3)
    )`
  yield* sql`CREATE INDEX refresh_tokens_login ON refresh_tokens (login_id)`

  yield* sql`
    CREATE TABLE device_authorizations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      device_code_hash text NOT NULL UNIQUE,
      user_code text NOT NULL,
      client_id text NOT NULL,
      scope text,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'redeemed')),
      user_id uuid REFERENCES users (id) ON DELETE CASCADE,
      interval_seconds integer NOT NULL,
      last_polled_at timestamptz(3),
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      expires_at timestamptz(3) NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX device_authorizations_pending_user_code ON device_authorizations (user_code)
    WHERE status = 'pending'`
  // Expired authorizations are swept when new ones are made.
  yield* sql`CREATE INDEX device_authorizations_expires ON device_authorizations (expires_at)`

  // Exactly one of user_id and api_key_id: the caller whose choice this is.
  yield* sql`
    CREATE TABLE agent_defaults (
      user_id uuid UNIQUE REFERENCES users (id) ON DELETE CASCADE,
      api_key_id uuid UNIQUE REFERENCES api_keys (id) ON DELETE CASCADE,
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      team_id uuid REFERENCES teams (id) ON DELETE SET NULL,
      updated_at timestamptz(3) NOT NULL DEFAULT now(),
      CHECK ((user_id IS NULL) <> (api_key_id IS NULL))
    )`
  // "The organization joined first" for the agent context.
  yield* sql`CREATE INDEX memberships_user_joined ON memberships (user_id, created_at, organization_id)`
})
