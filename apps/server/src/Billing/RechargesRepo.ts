import { SqlClient } from "@effect/sql"
import type { OrganizationId } from "@postline/domain"
import { Effect } from "effect"

/** A recharge decided by a spend and not started yet. */
export interface DueRecharge {
  readonly organizationId: OrganizationId
  readonly token: string
  readonly credits: number | null
  readonly customerId: string | null
  readonly paymentMethodId: string | null
}

/** A recharge whose payment started and whose outcome has not come: due to be looked up at the provider. */
export interface StartedRecharge {
  readonly organizationId: OrganizationId
  readonly token: string
  readonly paymentIntentId: string
  /** Started `giveUpMs` ago or longer: ended when still undecided. */
  readonly overdue: boolean
}

/** The auto-recharges that spends decide, as the server's own work starts, looks up and ends them: no caller's. */
export class RechargesRepo extends Effect.Service<RechargesRepo>()("Billing/RechargesRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Due: not started, and past the wait after its last failed attempt (pollMs doubled for each failure); the least tried first. */
    const dueRecharges = (limit: number, pollMs: number) =>
      sql<DueRecharge>`SELECT id AS "organizationId", auto_recharge_token::text AS token,
          auto_recharge_amount::float8 AS credits, payment_customer_id AS "customerId",
          payment_payment_method_id AS "paymentMethodId"
        FROM organizations WHERE auto_recharge_token IS NOT NULL AND auto_recharge_payment_intent_id IS NULL
          AND (auto_recharge_enabled OR auto_recharge_claimed_at IS NOT NULL)
          AND (auto_recharge_attempted_at IS NULL OR auto_recharge_attempted_at
            + ${pollMs} * power(2, auto_recharge_failures) * interval '1 millisecond' <= now())
        ORDER BY auto_recharge_attempted_at NULLS FIRST, id
        LIMIT ${limit}`.pipe(Effect.orDie)

    /** An attempt to start the recharge failed (Stripe did not answer); answers the failures so far. */
    const rechargeAttemptFailed = (organizationId: OrganizationId, token: string) =>
      sql<{ failures: number }>`UPDATE organizations SET auto_recharge_failures = auto_recharge_failures + 1,
          auto_recharge_attempted_at = now()
        WHERE id = ${organizationId} AND auto_recharge_token::text = ${token}
        RETURNING auto_recharge_failures AS failures`.pipe(Effect.map(([row]) => row?.failures ?? 0), Effect.orDie)

    /**
     * Claims the recharge before its payment is asked for: true while auto-recharge is on (or it was claimed
     * before, a payment that may have started). A PATCH that turns it off either came first (no claim, no
     * payment) or finds it claimed and leaves it, the payment under way.
     */
    const claimRecharge = (organizationId: OrganizationId, token: string) =>
      sql`UPDATE organizations SET auto_recharge_claimed_at = coalesce(auto_recharge_claimed_at, now())
        WHERE id = ${organizationId} AND auto_recharge_token::text = ${token}
          AND (auto_recharge_enabled OR auto_recharge_claimed_at IS NOT NULL)
        RETURNING id`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    const rechargeStarted = (organizationId: OrganizationId, token: string, paymentIntentId: string) =>
      sql`UPDATE organizations SET auto_recharge_payment_intent_id = ${paymentIntentId},
          auto_recharge_started_at = now(), auto_recharge_checks = 0, auto_recharge_checked_at = NULL
        WHERE id = ${organizationId} AND auto_recharge_token::text = ${token}`.pipe(Effect.asVoid, Effect.orDie)

    /**
     * Started recharges whose outcome has not come `waitMs` after the start, then after twice as long since the last
     * look each time (at most 64 times `waitMs`), and once more as soon as `giveUpMs` have passed since the start:
     * the longest waiting first. Not claimed: two processes may look one up at once, which does no harm (what a
     * look does is done once: Recharges.ts).
     */
    const startedRecharges = (limit: number, waitMs: number, giveUpMs: number) =>
      sql<StartedRecharge>`SELECT id AS "organizationId", auto_recharge_token::text AS token,
          auto_recharge_payment_intent_id AS "paymentIntentId",
          auto_recharge_started_at + ${giveUpMs} * interval '1 millisecond' <= now() AS overdue
        FROM organizations WHERE auto_recharge_payment_intent_id IS NOT NULL
          AND (coalesce(auto_recharge_checked_at, auto_recharge_started_at)
              + ${waitMs} * power(2, least(auto_recharge_checks, 6)) * interval '1 millisecond' <= now()
            OR (auto_recharge_started_at + ${giveUpMs} * interval '1 millisecond' <= now()
              AND coalesce(auto_recharge_checked_at, auto_recharge_started_at)
                < auto_recharge_started_at + ${giveUpMs} * interval '1 millisecond'))
        ORDER BY coalesce(auto_recharge_checked_at, auto_recharge_started_at), id
        LIMIT ${limit}`.pipe(Effect.orDie)

    /** The provider was asked about the recharge's payment and it has no outcome yet (or the provider did not answer). */
    const rechargeChecked = (organizationId: OrganizationId, token: string) =>
      sql`UPDATE organizations SET auto_recharge_checks = auto_recharge_checks + 1, auto_recharge_checked_at = now()
        WHERE id = ${organizationId} AND auto_recharge_token::text = ${token}`.pipe(Effect.asVoid, Effect.orDie)

    /**
     * Ends the recharge of `token`: the next spend below the threshold may start another; a failure turns it off.
     * Nothing when it had ended already (its webhook and the recharger's look both tell its end).
     */
    const rechargeEnded = (organizationId: OrganizationId, token: string, failure: string | null) =>
      sql`UPDATE organizations SET auto_recharge_token = NULL, auto_recharge_payment_intent_id = NULL,
          auto_recharge_claimed_at = NULL, auto_recharge_failures = 0, auto_recharge_attempted_at = NULL,
          auto_recharge_started_at = NULL, auto_recharge_checks = 0, auto_recharge_checked_at = NULL,
          auto_recharge_enabled = auto_recharge_enabled AND ${failure === null},
          auto_recharge_last_error = coalesce(${failure}, auto_recharge_last_error)
        WHERE id = ${organizationId} AND auto_recharge_token::text = ${token}`.pipe(Effect.asVoid, Effect.orDie)

    return {
      dueRecharges,
      claimRecharge,
      rechargeAttemptFailed,
      rechargeStarted,
      startedRecharges,
      rechargeChecked,
      rechargeEnded
    } as const
  })
}) {}
