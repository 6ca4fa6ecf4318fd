import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

// onboarding_data is json, not jsonb, so that it keeps the key order it was
// written in (the schema's) and is sent back byte for byte.
// Timestamps keep milliseconds only, so that the values in keyset cursors
// round-trip exactly through JavaScript. Names sort by code point (collation
// "C"), the same on every server whatever its locale.
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE server_secrets (name text PRIMARY KEY, value text NOT NULL)`
  yield* sql`
    INSERT INTO server_secrets (name, value)
    VALUES ('cursor', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''))`
  yield* sql`
    CREATE TABLE users (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      email text NOT NULL,
      name text NOT NULL,
      created_at timestamptz(3) NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX users_email_key ON users (lower(email))`
  yield* sql`
    CREATE TABLE access_tokens (
      token_hash text PRIMARY KEY,
      user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      created_at timestamptz(3) NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX access_tokens_user ON access_tokens (user_id)`
  yield* sql`
    CREATE TABLE organizations (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      name text COLLATE "C" NOT NULL,
      billing_email text,
      onboarding_data json,
      payment_customer_id text,
      payment_subscription_id text,
      payment_payment_method_id text,
      payment_metered_subscription_item_id text,
      credits_balance bigint NOT NULL DEFAULT 0,
      reserved_credits bigint NOT NULL DEFAULT 0,
      auto_recharge_enabled boolean NOT NULL DEFAULT false,
      auto_recharge_threshold bigint,
      auto_recharge_amount bigint,
      is_subscribed boolean NOT NULL DEFAULT false,
      subscription_status text NOT NULL DEFAULT 'inactive' CHECK (subscription_status IN
        ('active', 'inactive', 'trialing', 'past_due', 'canceled', 'paused', 'unpaid')),
      subscription_plan text,
      subscription_started_at timestamptz(3),
      subscription_ends_at timestamptz(3),
      subscription_current_period_end timestamptz(3),
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      updated_at timestamptz(3) NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE memberships (
      user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      updated_at timestamptz(3) NOT NULL DEFAULT now(),
      PRIMARY KEY (user_id, organization_id)
    )`
  yield* sql`CREATE INDEX memberships_organization ON memberships (organization_id)`
  yield* sql`
    CREATE TABLE teams (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      name text COLLATE "C" NOT NULL,
      website text,
      link_tracking_override boolean,
      timezone text,
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      updated_at timestamptz(3) NOT NULL DEFAULT now()
    )`
  for (const column of ["created_at", "updated_at", "name"]) {
    yield* sql`CREATE INDEX ${sql(`organizations_${column}`)} ON organizations (${sql(column)}, id)`
    yield* sql`CREATE INDEX ${sql(`teams_organization_${column}`)} ON teams (organization_id, ${sql(column)}, id)`
  }
})
