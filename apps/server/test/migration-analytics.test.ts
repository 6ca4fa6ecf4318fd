import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Exit, Layer, Redacted } from "effect"
import { migrations, runMigrations, runMigrationsOf } from "../src/Database/Migrations.js"
import { layerPostgres } from "../src/Database/Postgres.js"
import { layerEmbedded } from "../src/Database/Sql.js"
import { scopedPostgresDatabase, testDatabaseKind } from "./support/TestDatabase.js"

/** The schema before analytics. */
const migrateToBillingSchema = runMigrationsOf(Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0015")))

const UnmigratedDatabase = testDatabaseKind === "postgres"
  ? Layer.unwrapScoped(Effect.map(scopedPostgresDatabase, ({ url }) => layerPostgres(Redacted.make(url))))
  : layerEmbedded("memory://")

const minutes = 60_000
const days = 86_400_000

layer(UnmigratedDatabase)("migration 0015 (analytics)", (it) => {
  it.effect("puts the last 30 days' published targets on the schedule at its next point after now; older ones, unpublished and webhooks' never", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* migrateToBillingSchema
      const [{ team }] = yield* sql<{ team: string }>`WITH o AS (INSERT INTO organizations (name) VALUES ('O') RETURNING id)
        INSERT INTO teams (organization_id, name) SELECT id, 'T' FROM o RETURNING id AS team`
      const [{ account }] = yield* sql<{ account: string }>`INSERT INTO social_accounts (team_id, provider, handle, credentials, content_limits)
        VALUES (${team}, 'mastodon', 'h', 'x', '{}') RETURNING id AS account`
      const [{ hook }] = yield* sql<{ hook: string }>`INSERT INTO social_accounts (team_id, provider, handle, credentials, content_limits)
        VALUES (${team}, 'webhook', 'w', 'x', '{}') RETURNING id AS hook`
      const [{ now }] = yield* sql<{ now: Date }>`SELECT now() AS now`
      const target = (status: string, publishedAgo: number | null, socialAccountId = account) =>
        Effect.gen(function*() {
          const [{ id }] = yield* sql<{ id: string }>`INSERT INTO posts (team_id, content, status)
            VALUES (${team}, 'x', ${status === "published" ? "published" : "publishing"}) RETURNING id`
          const publishedAt = publishedAgo === null ? null : new Date(now.getTime() - publishedAgo)
          yield* sql`INSERT INTO post_targets (post_id, social_account_id, status, external_id, published_at)
            VALUES (${id}, ${socialAccountId}, ${status}, ${publishedAt === null ? null : "ext"}, ${publishedAt})`
          return { id, publishedAt }
        })
      const tenMinutes = yield* target("published", 10 * minutes)
      const twoDays = yield* target("published", 2 * days)
      const twentyNineDays = yield* target("published", 29 * days)
      const fortyDays = yield* target("published", 40 * days)
      const pending = yield* target("pending", null)
      const toWebhook = yield* target("published", 10 * minutes, hook)

      yield* runMigrations
      const rows = yield* sql<{ id: string; dueAt: Date | null }>`SELECT post_id AS id, analytics_due_at AS "dueAt" FROM post_targets`
      const dueOf = new Map(rows.map((row) => [row.id, row.dueAt?.getTime() ?? null]))
      // Their next point of the schedule: 15 minutes, 3 days and 30 days after publishing.
      expect(dueOf.get(tenMinutes.id)).toBe(tenMinutes.publishedAt!.getTime() + 15 * minutes)
      expect(dueOf.get(twoDays.id)).toBe(twoDays.publishedAt!.getTime() + 3 * days)
      expect(dueOf.get(twentyNineDays.id)).toBe(twentyNineDays.publishedAt!.getTime() + 30 * days)
      expect(dueOf.get(fortyDays.id)).toBeNull()
      expect(dueOf.get(pending.id)).toBeNull()
      expect(dueOf.get(toWebhook.id)).toBeNull()
    }))
})

layer(UnmigratedDatabase)("migration 0015 (analytics) without the ledger's CHECK", (it) => {
  it.effect("stops, naming the constraint, rather than replacing it with the analytics kind alone", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* migrateToBillingSchema
      yield* sql`ALTER TABLE credit_transactions DROP CONSTRAINT credit_transactions_kind_check`
      const exit = yield* Effect.exit(runMigrations)
      expect(Exit.isFailure(exit)).toBe(true)
      expect(String(exit)).toContain("credit_transactions_kind_check is missing")
      expect(yield* sql`SELECT 1 FROM pg_constraint WHERE conname = 'credit_transactions_kind_check'`).toEqual([])
    }))
})
