import { SqlClient } from "@effect/sql"
import type { OrganizationId, SubscriptionStatus } from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { spentThisMonthOf } from "../Credits/Repo.js"
import { selectFields } from "../Database/Columns.js"
import { billingFieldsOf } from "../Organizations/Repo.js"

/** An organization's billing as stored, one row. */
export interface BillingRow {
  readonly name: string
  readonly balance: number
  readonly reserved: number
  readonly available: number
  readonly paymentCustomerId: string | null
  readonly paymentSubscriptionId: string | null
  readonly paymentPaymentMethodId: string | null
  readonly paymentMeteredSubscriptionItemId: string | null
  readonly isSubscribed: boolean
  readonly subscriptionStatus: typeof SubscriptionStatus.Type
  readonly subscriptionPlan: string | null
  readonly subscriptionStartedAt: string | null
  readonly subscriptionEndsAt: string | null
  readonly subscriptionCurrentPeriodEnd: string | null
  readonly autoRechargeEnabled: boolean
  readonly autoRechargeThreshold: number | null
  readonly autoRechargeAmount: number | null
  readonly autoRechargePending: boolean
  readonly autoRechargeLastError: string | null
  readonly spendCap: number | null
  readonly spentThisMonth: number
}

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

/** The organization as a subscription checkout claimed it: its open checkout session, if any, and its subscription. */
export interface SubscriptionCheckoutClaim {
  readonly claim: string
  readonly sessionId: string | null
  readonly subscriptionId: string | null
  readonly subscriptionStatus: typeof SubscriptionStatus.Type
}

export interface SubscriptionState {
  readonly subscriptionId: string
  readonly status: typeof SubscriptionStatus.Type
  readonly plan: string | null
  readonly startedAt: Date | null
  readonly endsAt: Date | null
  readonly currentPeriodEnd: Date | null
  readonly meteredItemId: string | null
  readonly paymentMethodId: string | null
}

// A subscription that still gives its plan: the provider is still trying to collect a past_due one.
const subscribedStatuses = ["active", "trialing", "past_due"]

export class BillingRepo extends Effect.Service<BillingRepo>()("BillingRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const billing = billingFieldsOf()
    const columns = selectFields<BillingRow>(sql, {
      name: "o.name",
      balance: "o.credits_balance::float8",
      reserved: "o.reserved_credits::float8",
      available: "(o.credits_balance - o.reserved_credits)::float8",
      ...billing.payment,
      ...billing.subscription,
      ...billing.autoRecharge,
      autoRechargePending: "o.auto_recharge_token IS NOT NULL",
      autoRechargeLastError: "o.auto_recharge_last_error",
      spendCap: "o.spend_cap::float8",
      spentThisMonth: sql`${spentThisMonthOf(sql)}::float8`
    })

    const find = (organizationId: OrganizationId, lock = false) =>
      sql<BillingRow>`SELECT ${columns} FROM organizations o WHERE o.id = ${organizationId} ${sql.literal(lock ? "FOR UPDATE" : "")}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie
      )

    const updated = (statement: Effect.Effect<ReadonlyArray<BillingRow>, unknown>) =>
      statement.pipe(Effect.map(([row]) => row!), Effect.orDie)

    /** Keeps the first customer made for the organization: a second, made concurrently, is not used. */
    const keepCustomer = (organizationId: OrganizationId, customerId: string) =>
      sql<{ customerId: string }>`UPDATE organizations SET payment_customer_id = coalesce(payment_customer_id, ${customerId})
        WHERE id = ${organizationId} RETURNING payment_customer_id AS "customerId"`.pipe(
        Effect.map(([row]) => row!.customerId),
        Effect.orDie,
        policyRequire("Billing", "manage")
      )

    const setAutoRecharge = (
      organizationId: OrganizationId,
      settings: { readonly enabled: boolean; readonly threshold: number | null; readonly amount: number | null }
    ) =>
      updated(sql<BillingRow>`UPDATE organizations o SET auto_recharge_enabled = ${settings.enabled},
          auto_recharge_threshold = ${settings.threshold}, auto_recharge_amount = ${settings.amount},
          auto_recharge_last_error = CASE WHEN ${settings.enabled} THEN NULL ELSE auto_recharge_last_error END,
          -- Turned off, a recharge decided but not claimed by the recharger is withdrawn: no payment follows.
          auto_recharge_token = CASE WHEN ${settings.enabled} OR auto_recharge_claimed_at IS NOT NULL
            THEN auto_recharge_token END,
          updated_at = now()
        WHERE o.id = ${organizationId} RETURNING ${columns}`).pipe(policyRequire("Billing", "manage"))

    const setSpendCap = (organizationId: OrganizationId, cap: number | null) =>
      updated(sql<BillingRow>`UPDATE organizations o SET spend_cap = ${cap}, updated_at = now()
        WHERE o.id = ${organizationId} RETURNING ${columns}`).pipe(policyRequire("Billing", "manage"))

    // What the payment provider's events do: the server's own work, no caller's.

    /** Records the event; false when it was recorded before (a replay, or a concurrent delivery that came first). */
    const recordEvent = (eventId: string, type: string) =>
      sql`INSERT INTO billing_events (event_id, type) VALUES (${eventId}, ${type})
        ON CONFLICT (event_id) DO NOTHING RETURNING event_id`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    /** Forgets up to `limit` events received over 30 days ago: Stripe redelivers an event for 3 days at most. */
    const pruneEvents = (limit: number) =>
      sql`DELETE FROM billing_events WHERE event_id IN (SELECT event_id FROM billing_events
        WHERE received_at < now() - interval '30 days' ORDER BY received_at LIMIT ${limit})`.pipe(Effect.asVoid, Effect.orDie)

    const exists = (organizationId: OrganizationId) =>
      sql`SELECT 1 FROM organizations WHERE id = ${organizationId}`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    const organizationOfCustomer = (customerId: string) =>
      sql<{ id: OrganizationId }>`SELECT id FROM organizations WHERE payment_customer_id = ${customerId}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row?.id)),
        Effect.orDie
      )

    const savePaymentMethod = (organizationId: OrganizationId, paymentMethodId: string) =>
      sql`UPDATE organizations SET payment_payment_method_id = ${paymentMethodId}, updated_at = now()
        WHERE id = ${organizationId}`.pipe(Effect.asVoid, Effect.orDie)

    /**
     * Sets the subscription's state, unless a later event of the provider set it already; whether it was set.
     * An event about another subscription (an old or a duplicate one) counts only once the stored one has ended
     * (canceled, or never completed). Events of one second come in any order: among them, an incomplete
     * subscription's (its `created`, delivered late) does not undo a status it reached since.
     */
    const setSubscription = (customerId: string, state: SubscriptionState, at: Date) =>
      sql`UPDATE organizations SET
          payment_subscription_id = ${state.subscriptionId},
          payment_metered_subscription_item_id = ${state.meteredItemId},
          payment_payment_method_id = coalesce(${state.paymentMethodId}, payment_payment_method_id),
          subscription_status = ${state.status},
          is_subscribed = ${subscribedStatuses.includes(state.status)},
          subscription_plan = ${state.plan},
          subscription_started_at = ${state.startedAt},
          subscription_ends_at = ${state.endsAt},
          subscription_current_period_end = ${state.currentPeriodEnd},
          subscription_event_at = ${at},
          updated_at = now()
        WHERE payment_customer_id = ${customerId}
          AND (payment_subscription_id IS NULL OR payment_subscription_id = ${state.subscriptionId}
            OR subscription_status IN ('canceled', 'inactive'))
          AND (subscription_event_at IS NULL OR subscription_event_at < ${at} OR (subscription_event_at = ${at}
            AND NOT (${state.status} = 'inactive' AND subscription_status <> 'inactive')))
        RETURNING id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /** An invoice of the organization's subscription was not paid; another invoice's failure is no subscription's. */
    const markPastDue = (customerId: string, subscriptionId: string, at: Date) =>
      sql`UPDATE organizations SET subscription_status = 'past_due', subscription_event_at = ${at}, updated_at = now()
        WHERE payment_customer_id = ${customerId} AND payment_subscription_id = ${subscriptionId}
          AND subscription_status IN ('active', 'trialing', 'past_due')
          AND (subscription_event_at IS NULL OR subscription_event_at <= ${at})`.pipe(Effect.asVoid, Effect.orDie)

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

    /**
     * Claims the making of the organization's subscription checkout, unless another request holds the claim (taken
     * under `claimMs` ago: one that crashed holds it no longer). None while it is held.
     */
    const claimSubscriptionCheckout = (organizationId: OrganizationId, claimMs: number) =>
      sql<SubscriptionCheckoutClaim>`UPDATE organizations SET subscription_checkout_claim = gen_random_uuid(),
          subscription_checkout_claimed_at = now()
        WHERE id = ${organizationId} AND (subscription_checkout_claim IS NULL
          OR subscription_checkout_claimed_at + ${claimMs} * interval '1 millisecond' <= now())
        RETURNING subscription_checkout_claim::text AS claim, subscription_checkout_session_id AS "sessionId",
          payment_subscription_id AS "subscriptionId", subscription_status AS "subscriptionStatus"`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie,
        policyRequire("Billing", "manage")
      )

    /**
     * Gives the claim back, keeping `sessionId` as the organization's open subscription checkout when one was made.
     * The server's own bookkeeping: a session made at the provider is kept whatever the caller's role is now.
     * Whether the claim was still held: false when it lapsed and another checkout took it (nothing is kept).
     */
    const releaseSubscriptionCheckout = (organizationId: OrganizationId, claim: string, sessionId: Option.Option<string>) =>
      sql`UPDATE organizations SET subscription_checkout_claim = NULL, subscription_checkout_claimed_at = NULL
          ${Option.isSome(sessionId) ? sql`, subscription_checkout_session_id = ${sessionId.value}` : sql.literal("")}
        WHERE id = ${organizationId} AND subscription_checkout_claim::text = ${claim}
        RETURNING id`.pipe(Effect.map((rows) => rows.length === 1), Effect.orDie)

    /** The customer's organization and the subscription stored for it. */
    const subscriptionOfCustomer = (customerId: string) =>
      sql<{ organizationId: OrganizationId; subscriptionId: string | null; status: typeof SubscriptionStatus.Type }>`SELECT
          id AS "organizationId", payment_subscription_id AS "subscriptionId", subscription_status AS status
        FROM organizations WHERE payment_customer_id = ${customerId}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie
      )

    return {
      find: (organizationId: OrganizationId) => policyRequire("Billing", "view")(find(organizationId)),
      /** The row for a manager's change; inside a transaction, locked until it ends. */
      findForUpdate: (organizationId: OrganizationId) => policyRequire("Billing", "manage")(find(organizationId, true)),
      /** The row as a manager reads it before asking the provider for something: no lock, no transaction. */
      findToManage: (organizationId: OrganizationId) => policyRequire("Billing", "manage")(find(organizationId)),
      keepCustomer,
      setAutoRecharge,
      setSpendCap,
      recordEvent,
      pruneEvents,
      exists,
      organizationOfCustomer,
      savePaymentMethod,
      setSubscription,
      subscriptionOfCustomer,
      markPastDue,
      dueRecharges,
      claimRecharge,
      rechargeAttemptFailed,
      rechargeStarted,
      startedRecharges,
      rechargeChecked,
      rechargeEnded,
      claimSubscriptionCheckout,
      releaseSubscriptionCheckout
    } as const
  })
}) {}
