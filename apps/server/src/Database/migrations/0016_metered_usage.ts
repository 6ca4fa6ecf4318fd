import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { addLedgerKind } from "./LedgerKinds.js"

/**
 * Overage. A subscribed organization whose plan has a metered price buys the credits a spend lacks: an `overage`
 * entry in the ledger, and a row of `metered_usage` for the provider to bill. A server process claims due rows in
 * batches (`due_at` moves past a lease while one reports them, and later after each failure) and marks each
 * reported, or failed for good (`failed_at`, `last_error`) when the provider refuses it as it is; its id is the
 * meter event's identifier, so that a row reported twice (a process that died after reporting it) is counted
 * once by the provider. The customer is kept with the row, which is all its report needs: the usage is that
 * customer's whatever becomes of the organization, so a deleted organization leaves its rows (organization_id
 * null), to be reported all the same.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* addLedgerKind(sql, "overage")
  yield* sql`
    CREATE TABLE metered_usage (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      organization_id uuid REFERENCES organizations (id) ON DELETE SET NULL,
      customer_id text NOT NULL,
      credits bigint NOT NULL CHECK (credits > 0),
      created_at timestamptz(3) NOT NULL DEFAULT now(),
      due_at timestamptz(3) NOT NULL DEFAULT now(),
      failures integer NOT NULL DEFAULT 0,
      reported_at timestamptz(3),
      failed_at timestamptz(3),
      last_error text,
      CHECK (reported_at IS NULL OR failed_at IS NULL),
      CHECK ((failed_at IS NULL) = (last_error IS NULL))
    )`
  // What the reporter claims: neither reported nor failed for good.
  yield* sql`CREATE INDEX metered_usage_due ON metered_usage (due_at) WHERE reported_at IS NULL AND failed_at IS NULL`
  // For the foreign key: deleting an organization finds its rows to set their organization_id null without a scan.
  yield* sql`CREATE INDEX metered_usage_organization ON metered_usage (organization_id)`
  // A settled hold's latest `reserve` entry (CreditsRepo's heldThisMonth), found without reading the organization's ledger.
  yield* sql`CREATE INDEX credit_transactions_reserve ON credit_transactions (organization_id, post_id, social_account_id, created_at)
    WHERE kind = 'reserve'`
})
