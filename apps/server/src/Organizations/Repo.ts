import { SqlClient, SqlSchema } from "@effect/sql"
import { Organization, type OrganizationId, type UpdateOrganization, type UserId } from "@postline/domain"
import { Effect, Option, Schema } from "effect"
import { keyset, type PageRequest, type SortColumns, toPage } from "../Pagination/Keyset.js"

export const Role = Schema.Literal("owner", "admin", "member")
export type Role = typeof Role.Type

const membershipSortColumns: SortColumns = {
  createdAt: "m.organization_created_at",
  updatedAt: "m.organization_updated_at",
  name: "m.organization_name",
  id: "m.organization_id"
}

/** An organization with the caller's role in it. */
const OrganizationWithRole = Schema.extend(Organization, Schema.Struct({ role: Role }))

export class OrganizationsRepo extends Effect.Service<OrganizationsRepo>()("OrganizationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // Columns in the exact shape of the contract's Organization.
    const iso = (column: string) => sql.literal(`to_char(o.${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`)
    const columns = sql`o.id, o.name, o.billing_email, o.onboarding_data, o.payment_customer_id,
      o.payment_subscription_id, o.payment_payment_method_id, o.payment_metered_subscription_item_id,
      o.credits_balance::float8 AS credits_balance, o.reserved_credits::float8 AS reserved_credits,
      o.auto_recharge_enabled, o.auto_recharge_threshold::float8 AS auto_recharge_threshold,
      o.auto_recharge_amount::float8 AS auto_recharge_amount, o.is_subscribed, o.subscription_status,
      o.subscription_plan, ${iso("subscription_started_at")} AS subscription_started_at,
      ${iso("subscription_ends_at")} AS subscription_ends_at,
      ${iso("subscription_current_period_end")} AS subscription_current_period_end,
      ${iso("created_at")} AS created_at, ${iso("updated_at")} AS updated_at`

    const decodeOrganizations = Schema.decodeUnknown(Schema.Array(Organization))

    /** Pages walk the user's memberships, which carry their organization's sort keys. */
    const listForUser = (userId: UserId, request: PageRequest) =>
      Effect.gen(function*() {
        const page = keyset(sql, membershipSortColumns, request)
        const [rows, [{ count }]] = yield* Effect.all([
          sql`SELECT ${columns} FROM memberships m JOIN organizations o ON o.id = m.organization_id
              WHERE m.user_id = ${userId} AND ${page.where}
              ORDER BY ${page.orderBy} LIMIT ${page.limit}`.pipe(Effect.flatMap(decodeOrganizations)),
          sql<{ count: number }>`SELECT count(*)::int AS count FROM memberships WHERE user_id = ${userId}`
        ], { concurrency: "unbounded" })
        return yield* toPage({
          request,
          rows,
          total: count,
          existsBeyond: (side, boundary) =>
            sql<{ exists: boolean }>`SELECT EXISTS (SELECT 1 FROM memberships m
              WHERE m.user_id = ${userId} AND ${page.beyond(boundary, side === "after")}) AS exists`.pipe(
              Effect.map(([row]) => row.exists)
            )
        })
      }).pipe(Effect.orDie)

    const findForUser = SqlSchema.findOne({
      Request: Schema.Struct({ userId: Schema.String, organizationId: Schema.String }),
      Result: OrganizationWithRole,
      execute: ({ organizationId, userId }) =>
        sql`SELECT ${columns}, m.role FROM organizations o JOIN memberships m ON m.organization_id = o.id
            WHERE o.id = ${organizationId} AND m.user_id = ${userId}`
    })

    const findById = SqlSchema.single({
      Request: Schema.String,
      Result: Organization,
      execute: (id) => sql`SELECT ${columns} FROM organizations o WHERE o.id = ${id}`
    })

    /** Creates the organization and makes its creator an admin, in one transaction. */
    const createForUser = (userId: UserId, name: string) =>
      Effect.gen(function*() {
        const [{ id }] = yield* sql<{ id: string }>`INSERT INTO organizations (name) VALUES (${name}) RETURNING id`
        yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${userId}, ${id}, 'admin')`
        return yield* findById(id)
      }).pipe(sql.withTransaction, Effect.orDie)

    const update = (id: OrganizationId, changes: UpdateOrganization) =>
      Effect.gen(function*() {
        const assignments = [
          changes.name !== undefined ? sql`name = ${changes.name}` : undefined,
          changes.onboardingData !== undefined
            ? sql`onboarding_data = ${changes.onboardingData === null ? null : JSON.stringify(changes.onboardingData)}::jsonb`
            : undefined
        ].filter((fragment) => fragment !== undefined)
        if (assignments.length > 0) {
          yield* sql`UPDATE organizations SET ${sql.csv(assignments)}, updated_at = now() WHERE id = ${id}`
        }
        return yield* findById(id)
      }).pipe(Effect.orDie)

    return {
      listForUser,
      /** The organization and the user's role in it, if the user is a member. */
      findForUser: (userId: UserId, organizationId: OrganizationId) =>
        findForUser({ userId, organizationId }).pipe(
          Effect.map(Option.map(({ role, ...organization }) => ({ organization, role }))),
          Effect.orDie
        ),
      createForUser,
      update
    }
  })
}) {}
