import { SqlClient } from "@effect/sql"
import type { OrganizationId } from "@postline/domain"
import { Effect } from "effect"

/** Credits an organization bought beyond its plan's (an `overage` in its ledger), to report to the provider. */
export interface MeteredUsage {
  readonly id: string
  /** Null once the organization was deleted: the usage is still its customer's. */
  readonly organizationId: OrganizationId | null
  readonly customerId: string
  readonly credits: number
  readonly createdAt: Date
}

/** The metered usage CreditsRepo records, as the server's own work reports it: no caller's. */
export class UsageRepo extends Effect.Service<UsageRepo>()("Billing/UsageRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Up to `limit` rows to report that are due, the longest waiting first, each due again after `leaseSeconds`
     * unless marked reported or failed before. One statement, skipping rows another process is claiming: no two
     * processes claim a row at once, and another claims it again only once its lease lapsed (its process died, or
     * took longer than the lease to report it: the caller keeps a batch within the lease).
     */
    const claimDue = (limit: number, leaseSeconds: number) =>
      sql<MeteredUsage>`WITH due AS (
          SELECT id FROM metered_usage WHERE reported_at IS NULL AND failed_at IS NULL AND due_at <= now()
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

    /** The provider refused it as it is: failed for good, with the reason, and never claimed again. */
    const refused = (id: string, reason: string) =>
      sql`UPDATE metered_usage SET failures = failures + 1, failed_at = now(), last_error = ${reason}
        WHERE id = ${id} AND reported_at IS NULL`.pipe(Effect.asVoid, Effect.orDie)

    return { claimDue, reported, failed, refused } as const
  })
}) {}
