import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Billing's loose ends. A started recharge keeps when it started, how often the recharger has asked the payment
 * provider about its payment since and when it last did: a recharge whose webhook does not come is looked up, less
 * often each time. The organization's open subscription checkout is kept (its provider session id), so that a new
 * one expires it first, and so is the claim of whoever makes one now (`subscription_checkout_claim`, taken at
 * `subscription_checkout_claimed_at`): concurrent checkouts of one organization take turns without holding a
 * transaction across the provider's calls.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE organizations
    ADD COLUMN auto_recharge_started_at timestamptz(3),
    ADD COLUMN auto_recharge_checks integer NOT NULL DEFAULT 0,
    ADD COLUMN auto_recharge_checked_at timestamptz(3),
    ADD COLUMN subscription_checkout_session_id text,
    ADD COLUMN subscription_checkout_claim uuid,
    ADD COLUMN subscription_checkout_claimed_at timestamptz(3)`
  // Recharges started before this migration count as started now: looked up after the usual wait.
  yield* sql`UPDATE organizations SET auto_recharge_started_at = now() WHERE auto_recharge_payment_intent_id IS NOT NULL`
  yield* sql`CREATE INDEX organizations_recharge_started ON organizations (auto_recharge_started_at)
    WHERE auto_recharge_payment_intent_id IS NOT NULL`
})
