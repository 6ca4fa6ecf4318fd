import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Posts and what became of them on each account; every attempt at
 * publishing, recorded before and after the provider is called; the credits
 * ledger, whose sums the organization's balance and reserved credits are;
 * and the answers stored under Idempotency-Keys.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE posts (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
      content text NOT NULL,
      status text NOT NULL DEFAULT 'draft'
        CHECK (status IN ('draft', 'publishing', 'published', 'partially_published', 'failed')),
      social_account_ids uuid[] NOT NULL DEFAULT '{}',
      created_by_user_id uuid REFERENCES users (id) ON DELETE SET NULL,
      created_by_api_key_id uuid REFERENCES api_keys (id) ON DELETE SET NULL,
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      updated_at timestamptz(3) NOT NULL DEFAULT now()
    )`
  for (const column of ["created_at", "updated_at"]) {
    yield* sql`CREATE INDEX ${sql(`posts_team_${column}`)} ON posts (team_id, ${sql(column)}, id)`
  }
  // A target outlives its account: what was published stays on record.
  yield* sql`
    CREATE TABLE post_targets (
      post_id uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
      social_account_id uuid NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'published', 'failed')),
      external_id text,
      url text,
      published_at timestamptz(3),
      error_category text,
      error_message text,
      error_retryable boolean,
      credits_reserved integer NOT NULL DEFAULT 0,
      credits_spent integer NOT NULL DEFAULT 0,
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      updated_at timestamptz(3) NOT NULL DEFAULT now(),
      PRIMARY KEY (post_id, social_account_id)
    )`
  yield* sql`CREATE INDEX post_targets_account ON post_targets (social_account_id, post_id)`
  yield* sql`
    CREATE TABLE publish_attempts (
      post_id uuid NOT NULL,
      social_account_id uuid NOT NULL,
      attempt integer NOT NULL,
      started_at timestamptz(3) NOT NULL DEFAULT now(),
      finished_at timestamptz(3),
      result text CHECK (result IN ('published', 'failed')),
      external_id text,
      error_category text,
      error_message text,
      PRIMARY KEY (post_id, social_account_id, attempt),
      FOREIGN KEY (post_id, social_account_id) REFERENCES post_targets ON DELETE CASCADE
    )`

  yield* sql`
    CREATE TABLE credit_transactions (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      kind text NOT NULL CHECK (kind IN ('grant', 'reserve', 'spend', 'release')),
      amount bigint NOT NULL CHECK (amount > 0),
      balance_after bigint NOT NULL,
      reserved_after bigint NOT NULL,
      post_id uuid,
      social_account_id uuid,
      note text,
      created_at timestamptz(3) NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX credit_transactions_organization_created_at ON credit_transactions (organization_id, created_at, id)`
  // Whatever the code does, the balance never goes below what is held, nor what is held below nothing.
  yield* sql`
    ALTER TABLE organizations ADD CONSTRAINT organizations_credits_cover_reservations
      CHECK (reserved_credits >= 0 AND credits_balance >= reserved_credits)`

  yield* sql`
    CREATE TABLE idempotency_keys (
      caller text NOT NULL,
      operation text NOT NULL,
      key text NOT NULL,
      fingerprint text NOT NULL,
      response_status integer,
      response_body text,
      started_at timestamptz(3) NOT NULL DEFAULT now(),
      expires_at timestamptz(3) NOT NULL,
      PRIMARY KEY (caller, operation, key)
    )`
  yield* sql`CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at)`
})
