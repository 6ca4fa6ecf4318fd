import { SqlClient } from "@effect/sql"
import type { OrganizationId } from "@postline/domain"
import { Effect } from "effect"

/** Credits an organization bought beyond its plan's (an `overage` in its ledger), to report to the provider. */
export interface MeteredUsage {
  readonly id: string
  readonly organizationId: OrganizationId
  readonly customerId: string
  readonly credits: number
  readonly createdAt: Date
}

/** The metered usage CreditsRepo records, as the server's own work reports it: no caller's. */
export class UsageRepo extends Effect.Service<UsageRepo>()("Billing/UsageRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Up to `limit` unreported rows that are due, the longest waiting first, each due again after `leaseSeconds`
     * (unless reported before): a process that dies while reporting leaves them to be reported again then. One
     * statement, skipping rows another process is claiming: two processes never report a row at once.
     */
    const claimDue = (limit: number, leaseSeconds: number) =>
      sql<MeteredUsage>`WITH due AS (
          SELECT id FROM metered_usage WHERE reported_at IS NULL AND due_at <= now()
          ORDER BY due_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
        UPDATE metered_usage u SET due_at = now() + make_interval(secs => ${leaseSeconds})
        FROM due WHERE u.id = due.id
        RETURNING u.id::text AS id, u.organization_id AS "organizationId", u.customer_id AS "customerId",
          u.credits::float8 AS credits, u.created_at AS "createdAt"`.pipe(Effect.orDie)

    const reported = (id: string) =>
      sql`UPDATE metered_usage SET reported_at = now() WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    /** Reporting it failed: due again after `retryMs`, doubled for each failure before (up to 1024 times). */
    const failed = (id: string, retryMs: number) =>
      sql`UPDATE metered_usage SET failures = failures + 1,
          due_at = now() + ${retryMs} * power(2, least(failures, 10)) * interval '1 millisecond'
        WHERE id = ${id} AND reported_at IS NULL`.pipe(Effect.asVoid, Effect.orDie)

    return { claimDue, reported, failed } as const
  })
}) {}
