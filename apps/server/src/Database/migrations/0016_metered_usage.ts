import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { addLedgerKind } from "./LedgerKinds.js"

/**
 * Overage. A subscribed organization whose plan has a metered price buys the credits a spend lacks: an `overage`
 * entry in the ledger, and a row of `metered_usage` for the provider to bill. A server process claims due rows in
 * batches (`due_at` moves past a lease while one reports them, and later after each failure) and marks each
 * reported; its id is the meter event's identifier, so that a row reported twice (a process that died after
 * reporting it) is counted once by the provider. The customer is kept with the row: the usage is that
 * customer's, whatever the organization's later.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* addLedgerKind(sql, "overage")
  yield* sql`
    CREATE TABLE metered_usage (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      customer_id text NOT NULL,
      credits bigint NOT NULL CHECK (credits > 0),
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      due_at timestamptz(3) NOT NULL DEFAULT now(),
      failures integer NOT NULL DEFAULT 0,
      reported_at timestamptz(3)
    )`
  yield* sql`CREATE INDEX metered_usage_due ON metered_usage (due_at) WHERE reported_at IS NULL`
  yield* sql`CREATE INDEX metered_usage_organization ON metered_usage (organization_id, created_at)`
})
