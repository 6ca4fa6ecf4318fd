import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { addLedgerKind } from "./LedgerKinds.js"

/**
 * Analytics. Snapshots are append-only: a published post's engagement on each account
 * (`post_snapshots`, with the provider's raw answer for that post) and an account's counts
 * (`account_snapshots`). A published target is next read at `analytics_due_at` (the decaying schedule counts
 * from its publishing), an account at its own `analytics_due_at`: each server
 * process claims what is due in batches, as the scheduler claims due posts. A live read of an account's
 * figures is paid for with an `analytics` entry in the credits ledger.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The kinds of the ledger are those of the constraint before, and `analytics`.
  yield* addLedgerKind(sql, "analytics")

  yield* sql`
    CREATE TABLE post_snapshots (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      post_id uuid NOT NULL REFERENCES posts (id) ON DELETE CASCADE,
      social_account_id uuid NOT NULL,
      taken_at timestamptz(3) NOT NULL,
      likes bigint,
      reposts bigint,
      replies bigint,
      quotes bigint,
      views bigint,
      link_clicks bigint NOT NULL,
      raw jsonb NOT NULL
    )`
  yield* sql`CREATE INDEX post_snapshots_target ON post_snapshots (post_id, social_account_id, taken_at)`
  yield* sql`
    CREATE TABLE account_snapshots (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      social_account_id uuid NOT NULL REFERENCES social_accounts (id) ON DELETE CASCADE,
      taken_at timestamptz(3) NOT NULL,
      followers bigint,
      following bigint,
      posts bigint,
      raw jsonb NOT NULL
    )`
  yield* sql`CREATE INDEX account_snapshots_account ON account_snapshots (social_account_id, taken_at)`
  // Provider calls made for analytics, counted with publish attempts against the account's budgets.
  yield* sql`
    CREATE TABLE analytics_reads (
      social_account_id uuid NOT NULL REFERENCES social_accounts (id) ON DELETE CASCADE,
      read_at timestamptz(3) NOT NULL
    )`
  yield* sql`CREATE INDEX analytics_reads_account ON analytics_reads (social_account_id, read_at)`

  yield* sql`ALTER TABLE post_targets ADD COLUMN analytics_due_at timestamptz(3)`
  yield* sql`CREATE INDEX post_targets_analytics_due ON post_targets (analytics_due_at) WHERE analytics_due_at IS NOT NULL`
  // Targets published in the last 30 days join the schedule at its next point after now (older ones have passed
  // its end; a webhook has nothing to read): a bounded backlog at deploy, spread over the schedule, rather than every past post due at once. The
  // schedule's offsets as of this migration (Analytics/Schedule.ts), in seconds.
  yield* sql`UPDATE post_targets pt SET analytics_due_at = (
      SELECT min(pt.published_at + make_interval(secs => o.seconds)) FROM unnest(ARRAY[
        900, 3600, 21600, 86400, 259200, 604800, 2592000]) AS o (seconds)
      WHERE pt.published_at + make_interval(secs => o.seconds) > now())
    WHERE pt.status = 'published' AND pt.external_id IS NOT NULL AND pt.published_at > now() - interval '30 days'
      AND NOT EXISTS (SELECT 1 FROM social_accounts sa WHERE sa.id = pt.social_account_id AND sa.provider = 'webhook')`
  // Connecting verified the account just now: its first daily counts a day later; accounts there before, soon.
  yield* sql`ALTER TABLE social_accounts ADD COLUMN analytics_due_at timestamptz(3) DEFAULT now()`
  yield* sql`ALTER TABLE social_accounts ALTER COLUMN analytics_due_at SET DEFAULT now() + interval '1 day'`
  yield* sql`CREATE INDEX social_accounts_analytics_due ON social_accounts (analytics_due_at) WHERE analytics_due_at IS NOT NULL`
})
