import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Billing. Each payment provider event that acts is recorded in `billing_events` by its id, in the transaction
 * of what it does, so that a replayed or concurrently delivered event acts once. On the organization: the
 * monthly spend cap and what was spent or held in `spend_month`; a recharge that has been decided
 * (`auto_recharge_token`, set in the statement of the spend that decided it, so there is never a second one
 * under way), when the recharger claimed it to start its payment (from then on turning auto-recharge off no
 * longer withdraws it), its failed attempts to start (tried again later, after each a longer wait) and its
 * payment once started; and when the subscription's state was last set, so that an older
 * event arriving late does not overwrite a newer one.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE billing_events (
      event_id text PRIMARY KEY,
      type text NOT NULL,
      received_at timestamptz(3) NOT NULL DEFAULT now()
    )`
  // The recharger deletes events older than 30 days (Stripe retries a delivery for 3): by age, in batches.
  yield* sql`CREATE INDEX billing_events_received ON billing_events (received_at)`
  yield* sql`ALTER TABLE organizations
    ADD COLUMN spend_cap bigint CHECK (spend_cap > 0),
    ADD COLUMN spend_month date,
    ADD COLUMN month_spent bigint NOT NULL DEFAULT 0,
    ADD COLUMN auto_recharge_token uuid,
    ADD COLUMN auto_recharge_claimed_at timestamptz(3),
    ADD COLUMN auto_recharge_failures integer NOT NULL DEFAULT 0,
    ADD COLUMN auto_recharge_attempted_at timestamptz(3),
    ADD COLUMN auto_recharge_payment_intent_id text,
    ADD COLUMN auto_recharge_last_error text,
    ADD COLUMN subscription_event_at timestamptz(3)`
  yield* sql`CREATE INDEX organizations_recharge_due ON organizations (auto_recharge_token)
    WHERE auto_recharge_token IS NOT NULL AND auto_recharge_payment_intent_id IS NULL`
  yield* sql`CREATE INDEX organizations_payment_customer ON organizations (payment_customer_id)
    WHERE payment_customer_id IS NOT NULL`
})
