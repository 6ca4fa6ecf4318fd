import { SqlClient, type Statement } from "@effect/sql"
import {
  type CreditBalance,
  type CreditTransaction,
  type OrganizationId,
  PaymentRequired,
  type PostId,
  type SocialAccountId
} from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { BillingSettings } from "../Billing/Settings.js"
import { isoUtc, selectFields } from "../Database/Columns.js"
import { type PageRequest, paginate } from "../Pagination/Keyset.js"
import { creditCount, shortfallMessage } from "./Shortfall.js"

/** Credits held for one publish: its post and account, and the amount. */
export interface Hold {
  readonly postId: PostId
  readonly socialAccountId: SocialAccountId
  readonly amount: number
}

/** Credits one live analytics read of an account costs, and the post it was for, if any. */
export interface AnalyticsRead {
  readonly socialAccountId: SocialAccountId
  readonly postId?: PostId
  readonly amount: number
}

/** What an organization may spend now, as its row says. */
export interface Headroom {
  readonly available: number
  /** The monthly spend cap, if any, and what this month has spent or holds against it. */
  readonly cap: number | null
  readonly spentThisMonth: number
  /** Whether its plan buys what its credits lack (metered usage), so that `available` does not bound a spend. */
  readonly overage: boolean
}

/** The 402 of a spend the monthly cap stops. */
export const capReachedMessage = (total: number, cap: number, spentThisMonth: number) =>
  `This needs ${creditCount(total)}, beyond the organization's monthly spend cap of ${creditCount(cap)} ` +
  `(${spentThisMonth} spent this month); an admin or owner may raise the cap`

/** The first day of the current calendar month, UTC: the month of the spend cap. */
const thisMonthOf = (sql: Statement.Constructor) => sql`date_trunc('month', now() AT TIME ZONE 'UTC')::date`

/** What an organization's row says was spent or held this calendar month (its `month_spent` is of `spend_month`). */
export const spentThisMonthOf = (sql: Statement.Constructor) =>
  sql`(CASE WHEN spend_month = ${thisMonthOf(sql)} THEN month_spent ELSE 0 END)`

/**
 * The credits ledger. Every change of an organization's balance or reserved
 * credits is one entry here and one update of the organization, in the caller's
 * transaction, so that the two always agree; the update itself checks what it
 * may take, so concurrent requests cannot overspend.
 */
export class CreditsRepo extends Effect.Service<CreditsRepo>()("CreditsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const billing = yield* BillingSettings
    // Overage is sold only while the plan has a metered price (and its meter): what is bought is reported there.
    const overageOn = Option.exists(billing.plan, (plan) => plan.meterEvent !== null)
    // A plan that bills usage beyond its credits: active with the plan's metered item. Not while trialing: Stripe
    // bills nothing of a trial (its invoice is $0 for every item, the metered one too), so the usage would be free.
    const overageEligible = sql`(subscription_status = 'active'
      AND payment_metered_subscription_item_id IS NOT NULL AND payment_customer_id IS NOT NULL)`

    const columns = selectFields<CreditTransaction>(sql, {
      id: "c.id",
      kind: "c.kind",
      amount: "c.amount::float8",
      balanceAfter: "c.balance_after::float8",
      reservedAfter: "c.reserved_after::float8",
      postId: "c.post_id",
      socialAccountId: "c.social_account_id",
      note: "c.note",
      createdAt: isoUtc("c.created_at")
    })

    const balanceColumns = sql`credits_balance::float8 AS balance, reserved_credits::float8 AS reserved,
      (credits_balance - reserved_credits)::float8 AS available`

    const balanceOf = (organizationId: OrganizationId) =>
      sql<CreditBalance>`SELECT ${balanceColumns} FROM organizations WHERE id = ${organizationId}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie
      )

    const list = (organizationId: OrganizationId, request: PageRequest<"createdAt">) =>
      paginate<CreditTransaction, "createdAt">({
        sql,
        request,
        columns: { createdAt: "c.created_at", id: "c.id" },
        idOf: (entry) => entry.id,
        select: columns,
        rowsFrom: sql`FROM credit_transactions c WHERE c.organization_id = ${organizationId}`
      }).pipe(Effect.orDie, policyRequire("Credits", "audit"))

    const thisMonth = thisMonthOf(sql)
    const spentThisMonth = spentThisMonthOf(sql)

    /** 402 naming the monthly spend cap, when it is what stopped a spend; none when something else did. */
    const capReached = (organizationId: OrganizationId, spent: number) =>
      sql<{ cap: number | null; spent: number }>`SELECT spend_cap::float8 AS cap, ${spentThisMonth}::float8 AS spent
        FROM organizations WHERE id = ${organizationId}`.pipe(
        Effect.flatMap(([row]) =>
          row !== undefined && row.cap !== null && row.spent + spent > row.cap
            ? new PaymentRequired({ message: capReachedMessage(spent, row.cap, row.spent), reason: "spend_cap_reached" })
            : Effect.succeedNone)
      )

    /**
     * Moves the organization's credits by the deltas, when `guard` holds; the new figures, or none. What lowers
     * the available credits (a hold, a direct charge) is a spend: it counts against the monthly spend cap, checked
     * in this very statement, and when it leaves the available credits below the auto-recharge threshold it
     * decides a recharge unless one is under way (Billing/Recharger.ts starts it). A release gives its credits
     * back to the month (`spent` negative); grants and the settling of a hold are no spend.
     */
    const move = (
      organizationId: OrganizationId,
      deltas: { readonly balance: number; readonly reserved: number },
      guard = sql`TRUE`,
      spent = deltas.balance > 0 ? 0 : deltas.reserved - deltas.balance
    ) => {
      const spending = spent > 0
      const availableAfter = sql`credits_balance + ${deltas.balance} - reserved_credits - ${deltas.reserved}`
      return sql<CreditBalance>`UPDATE organizations SET
          credits_balance = credits_balance + ${deltas.balance},
          reserved_credits = reserved_credits + ${deltas.reserved},
          spend_month = ${thisMonth},
          month_spent = greatest(0, ${spentThisMonth} + ${spent})
          ${spending ? sql`, auto_recharge_token = CASE WHEN auto_recharge_enabled AND auto_recharge_token IS NULL
            AND ${availableAfter} < auto_recharge_threshold THEN gen_random_uuid() ELSE auto_recharge_token END` : sql.literal("")}
        WHERE id = ${organizationId} AND ${guard}
          ${spending ? sql`AND (spend_cap IS NULL OR ${spentThisMonth} + ${spent} <= spend_cap)` : sql.literal("")}
        RETURNING ${balanceColumns}`.pipe(
        Effect.flatMap(([row]) =>
          row === undefined && spending ? capReached(organizationId, spent) : Effect.succeed(Option.fromNullable(row)))
      )
    }

    const record = (
      organizationId: OrganizationId,
      kind: CreditTransaction["kind"],
      amount: number,
      after: CreditBalance,
      about: { readonly postId?: PostId; readonly socialAccountId?: SocialAccountId; readonly note?: string }
    ) =>
      sql`INSERT INTO credit_transactions
          (organization_id, kind, amount, balance_after, reserved_after, post_id, social_account_id, note)
        VALUES (${organizationId}, ${kind}, ${amount}, ${after.balance}, ${after.reserved},
          ${about.postId ?? null}, ${about.socialAccountId ?? null}, ${about.note ?? null})`

    /** Adds credits to the balance. */
    const grant = (organizationId: OrganizationId, amount: number, note: string | null) =>
      Effect.gen(function*() {
        const after = Option.getOrThrow(yield* move(organizationId, { balance: amount, reserved: 0 }))
        yield* record(organizationId, "grant", amount, after, note === null ? {} : { note })
        return after
      }).pipe(Effect.orDie, policyRequire("Credits", "grant"))

    /**
     * Adds to the balance the credits a spend of `total` lacks, read under the row's lock, when the organization's
     * plan bills usage beyond its credits. An `overage` entry, and a row of metered_usage that
     * Billing/UsageReporter.ts reports to the provider. Whether it added any.
     */
    const buyOverage = (organizationId: OrganizationId, total: number) =>
      Effect.gen(function*() {
        if (!overageOn) return false
        const [bought] = yield* sql<CreditBalance & { readonly credits: number; readonly customerId: string }>`
          WITH lacking AS (
            SELECT id, payment_customer_id, greatest(0, ${total} - (credits_balance - reserved_credits)) AS credits
            FROM organizations WHERE id = ${organizationId} AND ${overageEligible} FOR UPDATE)
          UPDATE organizations o SET credits_balance = o.credits_balance + l.credits
          FROM lacking l WHERE o.id = l.id AND l.credits > 0
          RETURNING l.credits::float8 AS credits, l.payment_customer_id AS "customerId", ${balanceColumns}`
        if (bought === undefined) return false
        yield* record(organizationId, "overage", bought.credits, bought, {
          note: "Bought beyond the plan's credits: billed as metered usage of the plan"
        })
        yield* sql`INSERT INTO metered_usage (organization_id, customer_id, credits)
          VALUES (${organizationId}, ${bought.customerId}, ${bought.credits})`
        return true
      })

    /**
     * Moves a spend of `total` when that many credits are available. When fewer are, the plan's overage buys what
     * is lacking and the spend is moved again, in one transaction: a spend cap that stops it leaves nothing bought.
     */
    const spend = (organizationId: OrganizationId, deltas: { readonly balance: number; readonly reserved: number }, total: number) => {
      const guard = sql`credits_balance - reserved_credits >= ${total}`
      return Effect.flatMap(move(organizationId, deltas, guard), (moved) =>
        Option.isSome(moved) ? Effect.succeed(moved) : sql.withTransaction(
          Effect.flatMap(buyOverage(organizationId, total), (bought) => bought ? move(organizationId, deltas, guard) : Effect.succeed(moved))
        ))
    }

    /** Holds the credits of every hold at once, or none of them: 402 when fewer are available (and no overage buys them). */
    const reserve = (organizationId: OrganizationId, holds: ReadonlyArray<Hold>) =>
      Effect.gen(function*() {
        const costly = holds.filter((hold) => hold.amount > 0)
        const total = costly.reduce((sum, hold) => sum + hold.amount, 0)
        if (total === 0) return
        const moved = yield* spend(organizationId, { balance: 0, reserved: total }, total)
        if (Option.isNone(moved)) {
          const { available } = Option.getOrThrow(yield* balanceOf(organizationId))
          return yield* new PaymentRequired({
            message: shortfallMessage(billing, "Publishing", organizationId, total, available),
            reason: "insufficient_credits"
          })
        }
        // One entry per hold, each showing the figures after it, as if they were made one by one.
        let reserved = moved.value.reserved - total
        for (const hold of costly) {
          reserved += hold.amount
          yield* record(organizationId, "reserve", hold.amount, { ...moved.value, reserved }, hold)
        }
      }).pipe(Effect.catchTag("SqlError", Effect.die), policyRequire("Post", "publish"))

    /** Whether the hold was made this month: its latest `reserve` entry, the newest entries read first. */
    const heldThisMonth = (organizationId: OrganizationId, hold: Hold) =>
      sql<{ thisMonth: boolean }>`SELECT date_trunc('month', created_at AT TIME ZONE 'UTC')::date = ${thisMonth} AS "thisMonth"
        FROM credit_transactions WHERE organization_id = ${organizationId} AND kind = 'reserve'
          AND post_id = ${hold.postId} AND social_account_id = ${hold.socialAccountId}
        ORDER BY created_at DESC LIMIT 1`.pipe(Effect.map(([row]) => row?.thisMonth === true))

    /**
     * Ends a hold: a publish that succeeded spends it from the balance; one that failed releases it. A release
     * gives its credits back to this month's spend only when the hold counted in this month: one made last month
     * was last month's, and giving it back now would raise this month's cap.
     */
    const settle = (organizationId: OrganizationId, hold: Hold, outcome: "spend" | "release") =>
      Effect.gen(function*() {
        if (hold.amount === 0) return
        const deltas = { balance: outcome === "spend" ? -hold.amount : 0, reserved: -hold.amount }
        const givesBack = outcome === "release" && (yield* heldThisMonth(organizationId, hold))
        const after = Option.getOrThrow(yield* move(organizationId, deltas, sql`TRUE`, givesBack ? -hold.amount : 0))
        yield* record(organizationId, outcome, hold.amount, after, hold)
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /**
     * Takes each read's credits straight from the available credits, all or none: 402 when fewer are available
     * (and no overage buys them). One `analytics` entry per account read, in the caller's transaction.
     */
    const charge = (organizationId: OrganizationId, reads: ReadonlyArray<AnalyticsRead>) =>
      Effect.gen(function*() {
        const costly = reads.filter((read) => read.amount > 0)
        const total = costly.reduce((sum, read) => sum + read.amount, 0)
        if (total === 0) return
        const moved = yield* spend(organizationId, { balance: -total, reserved: 0 }, total)
        if (Option.isNone(moved)) {
          const { available } = Option.getOrThrow(yield* balanceOf(organizationId))
          return yield* new PaymentRequired({
            message: shortfallMessage(billing, "Reading analytics", organizationId, total, available),
            reason: "insufficient_credits"
          })
        }
        let balance = moved.value.balance + total
        for (const read of costly) {
          balance -= read.amount
          yield* record(organizationId, "analytics", read.amount, { ...moved.value, balance }, read)
        }
      }).pipe(Effect.catchTag("SqlError", Effect.die), policyRequire("Analytics", "refresh"))

    const noHeadroom: Headroom = { available: 0, cap: null, spentThisMonth: 0, overage: false }
    const headroomOf = (organizationId: OrganizationId) =>
      sql<Headroom>`SELECT (credits_balance - reserved_credits)::float8 AS available, spend_cap::float8 AS cap,
          ${spentThisMonth}::float8 AS "spentThisMonth", ${overageOn ? overageEligible : sql.literal("false")} AS overage
        FROM organizations WHERE id = ${organizationId}`.pipe(Effect.map(([row]) => row ?? noHeadroom), Effect.orDie)

    return {
      balanceOf: (organizationId: OrganizationId) => policyRequire("Credits", "view")(balanceOf(organizationId)),
      headroomOf: (organizationId: OrganizationId) => policyRequire("Credits", "view")(headroomOf(organizationId)),
      list,
      grant,
      reserve,
      settle,
      charge
    } as const
  }),
  dependencies: [BillingSettings.Default]
}) {}
