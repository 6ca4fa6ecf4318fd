import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Connecting accounts by signing in at the network (OAuth), and keeping their tokens alive.
 *
 * - `account_connects`: one connect a caller started for a team, found again by the hash of its one-time `state`
 *   when the network sends the person back; `pending` is what the network needs to finish (a PKCE verifier),
 *   encrypted. A pending connect past `expires_at` is expired.
 * - `oauth_clients`: the app Postline registered on a server for a redirect address (a Mastodon instance's), its
 *   secret encrypted; made the first time one of the server's users connects.
 * - `social_accounts`: X is a provider; `network_user_id` names the network's user, so that connecting the same
 *   user again updates their account; `token_expires_at` is when the access token ends (`token_issued_at` when it
 *   was given, so that one is renewed before half its life has gone, however short), and the renewal claim
 *   (`renewal_claim`, `renewal_claimed_until`) lets one process at a time renew it, `renewal_retry_at` after a
 *   renewal that failed for a while.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE social_accounts DROP CONSTRAINT social_accounts_provider_check`
  yield* sql`ALTER TABLE social_accounts ADD CONSTRAINT social_accounts_provider_check
    CHECK (provider IN ('bluesky', 'mastodon', 'x', 'webhook'))`
  yield* sql`ALTER TABLE social_accounts
    ADD COLUMN network_user_id text,
    ADD COLUMN token_expires_at timestamptz,
    ADD COLUMN token_issued_at timestamptz,
    ADD COLUMN renewal_claim uuid,
    ADD COLUMN renewal_claimed_until timestamptz,
    ADD COLUMN renewal_failures integer NOT NULL DEFAULT 0,
    ADD COLUMN renewal_retry_at timestamptz`
  yield* sql`CREATE INDEX social_accounts_network_user ON social_accounts (team_id, provider, network_user_id)
    WHERE network_user_id IS NOT NULL`
  yield* sql`CREATE INDEX social_accounts_token_expiry ON social_accounts (token_expires_at)
    WHERE token_expires_at IS NOT NULL`
  yield* sql`
    CREATE TABLE account_connects (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
      user_id uuid REFERENCES users (id) ON DELETE CASCADE,
      api_key_id uuid REFERENCES api_keys (id) ON DELETE CASCADE,
      provider text NOT NULL CHECK (provider IN ('bluesky', 'mastodon', 'x')),
      state_hash text NOT NULL UNIQUE,
      pending text NOT NULL,
      redirect_uri text NOT NULL,
      return_to text,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'connecting', 'connected', 'failed')),
      social_account_id uuid REFERENCES social_accounts (id) ON DELETE SET NULL,
      error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      finished_at timestamptz,
      CHECK ((user_id IS NULL) <> (api_key_id IS NULL))
    )`
  yield* sql`CREATE INDEX account_connects_expiry ON account_connects (expires_at)`
  yield* sql`
    CREATE TABLE oauth_clients (
      provider text NOT NULL,
      server text NOT NULL,
      redirect_uri text NOT NULL,
      client_id text NOT NULL,
      client_secret text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (provider, server, redirect_uri)
    )`
})
