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
      claimSubscriptionCheckout,
      releaseSubscriptionCheckout
    } as const
  })
}) {}
