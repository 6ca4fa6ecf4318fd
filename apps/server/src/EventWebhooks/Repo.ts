import { SqlClient, type Statement } from "@effect/sql"
import { type EventType, eventTypes, type EventWebhook, type OrganizationId } from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc, selectFields } from "../Database/Columns.js"

/**
 * `INSERT …` of one event for each row of `ended` (a CTE of `post_targets` rows as a statement left them) that
 * has ended, published or failed, for the organizations that have an event webhook: a part of the statement that
 * ends the targets, so that an event is recorded exactly when, and only if, a target's end is.
 */
export const insertEventsOf = (sql: SqlClient.SqlClient, ended: string): Statement.Fragment =>
  sql`INSERT INTO event_deliveries (organization_id, type, data)
    SELECT w.organization_id, CASE e.status WHEN 'published' THEN 'post.published' WHEN 'deleted' THEN 'post.deleted'
      ELSE 'post.failed' END,
      jsonb_build_object('organizationId', w.organization_id, 'teamId', p.team_id, 'postId', e.post_id,
        'socialAccountId', e.social_account_id,
        'provider', coalesce(sa.provider, (SELECT a.provider FROM publish_attempts a
          WHERE a.post_id = e.post_id AND a.social_account_id = e.social_account_id ORDER BY a.attempt DESC LIMIT 1)),
        'status', e.status, 'externalId', e.external_id, 'url', e.url,
        'publishedAt', ${sql.literal(isoUtc("e.published_at"))},
        'error', CASE WHEN e.error_category IS NULL THEN NULL ELSE jsonb_build_object('category', e.error_category,
          'message', e.error_message, 'retryable', coalesce(e.error_retryable, false)) END,
        'creditsSpent', e.credits_spent, 'deletedAt', ${sql.literal(isoUtc("e.deleted_at"))})
    FROM ${sql.literal(ended)} e JOIN posts p ON p.id = e.post_id JOIN teams t ON t.id = p.team_id
      JOIN event_webhooks w ON w.organization_id = t.organization_id
      LEFT JOIN social_accounts sa ON sa.id = e.social_account_id
    WHERE e.status IN ('published', 'failed', 'deleted')`

/** An event to deliver, with where to and the secret (encrypted) to sign it with. */
export interface DueDelivery {
  readonly id: string
  readonly organizationId: OrganizationId
  readonly type: EventType
  readonly data: Record<string, unknown>
  /** This one included. */
  readonly attempts: number
  readonly createdAt: Date
  readonly url: string
  readonly secret: string
}

/** An organization's event webhook and the events waiting for it. */
export class EventWebhooksRepo extends Effect.Service<EventWebhooksRepo>()("EventWebhooksRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // The exact JSON form of EventWebhook: rows are sent as they come.
    const columns = selectFields<EventWebhook>(sql, {
      organizationId: "w.organization_id",
      url: "w.url",
      events: `'${JSON.stringify(eventTypes)}'::json`,
      secretCreatedAt: isoUtc("w.secret_created_at"),
      pendingDeliveries: "(SELECT count(*)::int FROM event_deliveries d WHERE d.organization_id = w.organization_id)",
      lastDeliveredAt: isoUtc("w.last_delivered_at"),
      lastError: `CASE WHEN w.last_error IS NULL THEN NULL
        ELSE json_build_object('message', w.last_error, 'at', ${isoUtc("w.last_error_at")}) END`,
      createdAt: isoUtc("w.created_at"),
      updatedAt: isoUtc("w.updated_at")
    })

    const find = (organizationId: OrganizationId) =>
      sql<EventWebhook>`SELECT ${columns} FROM event_webhooks w WHERE w.organization_id = ${organizationId}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie,
        policyRequire("EventWebhook", "manage")
      )

    /** Whether the organization has one, its row locked until the transaction ends. */
    const lock = (organizationId: OrganizationId) =>
      sql`SELECT 1 FROM event_webhooks WHERE organization_id = ${organizationId} FOR UPDATE`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie,
        policyRequire("EventWebhook", "manage")
      )

    /** Creates it, or changes its URL; `secret` (encrypted) replaces the signing secret when given. */
    const save = (organizationId: OrganizationId, url: string, secret: string | null) =>
      sql<EventWebhook>`INSERT INTO event_webhooks AS w (organization_id, url, secret)
        VALUES (${organizationId}, ${url}, ${secret ?? ""})
        ON CONFLICT (organization_id) DO UPDATE SET url = EXCLUDED.url, updated_at = now(),
          secret = ${secret === null ? sql`w.secret` : sql`EXCLUDED.secret`},
          secret_created_at = ${secret === null ? sql`w.secret_created_at` : sql`now()`}
        RETURNING ${columns}`.pipe(Effect.map(([row]) => row), Effect.orDie, policyRequire("EventWebhook", "manage"))

    /** Removes it and, with it, the events waiting for it; answers it as it was. */
    const remove = (organizationId: OrganizationId) =>
      sql<EventWebhook>`DELETE FROM event_webhooks w WHERE w.organization_id = ${organizationId}
        RETURNING ${columns}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie,
        policyRequire("EventWebhook", "manage")
      )

    /**
     * Up to `limit` events due, oldest first, each counted as attempted once more and due again after
     * `leaseSeconds` (unless its delivery says otherwise before): a process that dies while delivering leaves it
     * to be delivered again then. One statement: the rows are locked only while it runs.
     */
    const claimDue = (limit: number, leaseSeconds: number) =>
      sql<DueDelivery>`WITH due AS (
          SELECT id FROM event_deliveries WHERE due_at <= now() ORDER BY due_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
        UPDATE event_deliveries d SET attempts = d.attempts + 1, due_at = now() + make_interval(secs => ${leaseSeconds})
        FROM due, event_webhooks w
        WHERE d.id = due.id AND w.organization_id = d.organization_id
        RETURNING d.id, d.organization_id AS "organizationId", d.type, d.data, d.attempts,
          d.created_at AS "createdAt", w.url, w.secret`.pipe(Effect.orDie)

    /** The receiver took it: it is done, and the webhook says when it last delivered. */
    const delivered = (id: string) =>
      sql`WITH gone AS (DELETE FROM event_deliveries WHERE id = ${id} RETURNING organization_id)
        UPDATE event_webhooks SET last_delivered_at = now(), last_error = NULL, last_error_at = NULL
        WHERE organization_id IN (SELECT organization_id FROM gone)`.pipe(Effect.asVoid, Effect.orDie)

    /** It failed: tried again in `retryInSeconds`, or given up on (deleted) when null; the webhook says why. */
    const failed = (id: string, error: string, retryInSeconds: number | null) =>
      (retryInSeconds === null
        ? sql`WITH gone AS (DELETE FROM event_deliveries WHERE id = ${id} RETURNING organization_id)
            UPDATE event_webhooks SET last_error = ${error}, last_error_at = now()
            WHERE organization_id IN (SELECT organization_id FROM gone)`
        : sql`WITH kept AS (UPDATE event_deliveries SET due_at = now() + make_interval(secs => ${retryInSeconds})
              WHERE id = ${id} RETURNING organization_id)
            UPDATE event_webhooks SET last_error = ${error}, last_error_at = now()
            WHERE organization_id IN (SELECT organization_id FROM kept)`).pipe(Effect.asVoid, Effect.orDie)

    /** Every webhook's secret, encrypted: one row per organization that has one. */
    const secrets = sql<{ readonly organizationId: OrganizationId; readonly secret: string }>`SELECT
        organization_id AS "organizationId", secret FROM event_webhooks`.pipe(Effect.orDie)

    /** Replaces a secret's ciphertext, unless it changed meanwhile. */
    const reencrypt = (organizationId: OrganizationId, before: string, after: string) =>
      sql`UPDATE event_webhooks SET secret = ${after} WHERE organization_id = ${organizationId} AND secret = ${before}`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    return { find, lock, save, remove, claimDue, delivered, failed, secrets, reencrypt } as const
  })
}) {}
