import { SqlClient } from "@effect/sql"
import type { Organization, OrganizationId, UpdateOrganization, UserId } from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc, selectFields } from "../Database/Columns.js"
import { type PageRequest, paginate, type SortColumns, sortColumnsOf } from "../Pagination/Keyset.js"

/** The user's memberships carry their organization's sort keys: a page is one index range scan. */
const membershipSortColumns: SortColumns = {
  createdAt: "m.organization_created_at",
  updatedAt: "m.organization_updated_at",
  name: "m.organization_name",
  id: "m.organization_id"
}

/**
 * The billing fields of `organizations o`, in three groups so that each reader puts them in its own order (the
 * contract's Organization has the credits between the payment ids and auto-recharge), named as both the contract's
 * Organization and billing's state name them; `identifier` shows or hides the payment provider's ids.
 */
export const billingFieldsOf = (identifier: (column: string) => string = (column) => column) => ({
  payment: {
    paymentCustomerId: identifier("o.payment_customer_id"),
    paymentSubscriptionId: identifier("o.payment_subscription_id"),
    paymentPaymentMethodId: identifier("o.payment_payment_method_id"),
    paymentMeteredSubscriptionItemId: identifier("o.payment_metered_subscription_item_id")
  },
  autoRecharge: {
    autoRechargeEnabled: "o.auto_recharge_enabled",
    autoRechargeThreshold: "o.auto_recharge_threshold::float8",
    autoRechargeAmount: "o.auto_recharge_amount::float8"
  },
  subscription: {
    isSubscribed: "o.is_subscribed",
    subscriptionStatus: "o.subscription_status",
    subscriptionPlan: "o.subscription_plan",
    subscriptionStartedAt: isoUtc("o.subscription_started_at"),
    subscriptionEndsAt: isoUtc("o.subscription_ends_at"),
    subscriptionCurrentPeriodEnd: isoUtc("o.subscription_current_period_end")
  }
})

export class OrganizationsRepo extends Effect.Service<OrganizationsRepo>()("OrganizationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * The exact JSON form of the contract's Organization: rows are sent as they come. `identifier` shows or hides
     * a payment identifier (the provider's customer, subscription, card and metered item ids).
     */
    const columnsWith = (identifier: (column: string) => string) => {
      const billing = billingFieldsOf(identifier)
      return selectFields<Organization>(sql, {
        id: "o.id",
        name: "o.name",
        billingEmail: "o.billing_email",
        onboardingData: "o.onboarding_data",
        ...billing.payment,
        creditsBalance: "o.credits_balance::float8",
        reservedCredits: "o.reserved_credits::float8",
        ...billing.autoRecharge,
        ...billing.subscription,
        createdAt: isoUtc("o.created_at"),
        updatedAt: isoUtc("o.updated_at")
      })
    }
    // For the organization's API keys and its admins and owners.
    const columns = columnsWith((column) => column)
    // Through the caller's membership `m`: the payment identifiers are billing's, null for plain members.
    const memberColumns = columnsWith((column) => `CASE WHEN m.role IN ('admin', 'owner') THEN ${column} END`)

    const listForUser = (userId: UserId, request: PageRequest) =>
      paginate<Organization>({
        sql,
        request,
        columns: membershipSortColumns,
        idOf: (organization) => organization.id,
        select: memberColumns,
        rowsFrom: sql`FROM memberships m JOIN organizations o ON o.id = m.organization_id WHERE m.user_id = ${userId}`,
        keysFrom: sql`FROM memberships m WHERE m.user_id = ${userId}`
      }).pipe(Effect.orDie, policyRequire("Organization", "list"))

    /** The page of an API key's list: its one organization. */
    const listOne = (organizationId: OrganizationId, request: PageRequest) =>
      paginate<Organization>({
        sql,
        request,
        columns: sortColumnsOf("o"),
        idOf: (organization) => organization.id,
        select: columns,
        rowsFrom: sql`FROM organizations o WHERE o.id = ${organizationId}`
      }).pipe(Effect.orDie, policyRequire("Organization", "list"))

    const find = (organizationId: OrganizationId) =>
      sql<Organization>`SELECT ${columns} FROM organizations o WHERE o.id = ${organizationId}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    /** The organization, if the user is a member: the membership join is the access check. */
    const findForMember = (userId: UserId, organizationId: OrganizationId) =>
      sql<Organization>`SELECT ${memberColumns} FROM organizations o
        JOIN memberships m ON m.organization_id = o.id AND m.user_id = ${userId}
        WHERE o.id = ${organizationId}`.pipe(Effect.map((rows) => Option.fromNullable(rows[0])), Effect.orDie)

    /** Creates the organization and makes its creator an admin, in one transaction. */
    const createForUser = (userId: UserId, name: string) =>
      Effect.gen(function*() {
        const [{ id }] = yield* sql<{ id: OrganizationId }>`INSERT INTO organizations (name) VALUES (${name}) RETURNING id`
        yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${userId}, ${id}, 'admin')`
        return Option.getOrThrow(yield* find(id))
      }).pipe(sql.withTransaction, Effect.orDie, policyRequire("Organization", "create"))

    const update = (id: OrganizationId, changes: UpdateOrganization) => {
      const assignments = [
        changes.name !== undefined ? sql`name = ${changes.name}` : undefined,
        changes.onboardingData !== undefined
          ? sql`onboarding_data = ${changes.onboardingData === null ? null : JSON.stringify(changes.onboardingData)}::json`
          : undefined
      ].filter((fragment) => fragment !== undefined)
      return (assignments.length === 0
        ? Effect.map(find(id), Option.getOrThrow)
        : Effect.map(
          sql<Organization>`UPDATE organizations o SET ${sql.csv(assignments)}, updated_at = now()
            WHERE o.id = ${id} RETURNING ${columns}`,
          ([row]) => row
        )).pipe(Effect.orDie, policyRequire("Organization", "manage"))
    }

    return {
      listForUser,
      listOne,
      find,
      findForMember,
      createForUser,
      update,
      /** The contract's JSON form of `organizations o`, for other repositories' statements: whole, for an API key. */
      columns,
      /** The same through the caller's membership `m`, the payment identifiers hidden from plain members. */
      memberColumns
    } as const
  })
}) {}
