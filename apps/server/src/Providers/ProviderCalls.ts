import type { SqlClient } from "@effect/sql"
import type { SocialAccountId } from "@postline/domain"
import { Effect } from "effect"
import type { BudgetWindow, Usage } from "./Budgets.js"

/**
 * An account's provider calls, each with when it was made (`at`): publish attempts and analytics reads, which
 * share the account's budgets. Publishing and analytics both count from here, so that neither forgets the other.
 */
export const providerCalls = (sql: SqlClient.SqlClient, socialAccountId: SocialAccountId) =>
  sql`(SELECT started_at AS at FROM publish_attempts WHERE social_account_id = ${socialAccountId}
    UNION ALL SELECT read_at AS at FROM analytics_reads WHERE social_account_id = ${socialAccountId})`

/**
 * The account's provider calls in the last `seconds` of each window before `now` (the transaction's time when
 * absent), in the order of the windows, its row locked until the transaction ends so that two processes take
 * turns at counting.
 */
export const lockProviderUsage = (
  sql: SqlClient.SqlClient,
  socialAccountId: SocialAccountId,
  windows: ReadonlyArray<BudgetWindow>,
  now?: Date
) =>
  Effect.gen(function*() {
    yield* sql`SELECT 1 FROM social_accounts WHERE id = ${socialAccountId} FOR UPDATE`
    const at = now === undefined ? sql`now()` : sql`${now}::timestamptz`
    const [{ usage }] = yield* sql<{ readonly usage: Usage }>`SELECT ARRAY(
        SELECT (SELECT count(*) FROM ${providerCalls(sql, socialAccountId)} c
          WHERE c.at > ${at} - make_interval(secs => w.seconds::int))::int
        FROM jsonb_array_elements_text(${JSON.stringify(windows.map((window) => window.seconds))}::jsonb)
          WITH ORDINALITY AS w (seconds, n)
        ORDER BY w.n) AS usage`
    return usage
  })
