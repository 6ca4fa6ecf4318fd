import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted } from "effect"
import { migrations, runMigrations, runMigrationsOf } from "../src/Database/Migrations.js"
import { layerPostgres } from "../src/Database/Postgres.js"
import { layerEmbedded } from "../src/Database/Sql.js"
import { scopedPostgresDatabase, testDatabaseKind } from "./support/TestDatabase.js"

/** The schema as the workflow engine's scheduler left it: every migration before due-time dispatch. */
const migrateToEngineSchema = runMigrationsOf(
  Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0010"))
)

const UnmigratedDatabase = testDatabaseKind === "postgres"
  ? Layer.unwrapScoped(Effect.map(scopedPostgresDatabase, ({ url }) => layerPostgres(Redacted.make(url))))
  : layerEmbedded("memory://")

layer(UnmigratedDatabase)("migration 0010 (due-time dispatch)", (it) => {
  it.effect("makes what the engine was to send due: schedules at their time, targets between attempts at once, nothing else", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* migrateToEngineSchema
      const [{ team }] = yield* sql<{ team: string }>`WITH o AS (INSERT INTO organizations (name) VALUES ('O') RETURNING id)
        INSERT INTO teams (organization_id, name) SELECT id, 'T' FROM o RETURNING id AS team`
      const [{ account }] = yield* sql<{ account: string }>`INSERT INTO social_accounts (team_id, provider, handle, credentials, content_limits)
        VALUES (${team}, 'webhook', 'h', 'x', '{}') RETURNING id AS account`
      const post = (status: string, scheduledAt: string | null) =>
        Effect.map(
          sql<{ id: string }>`INSERT INTO posts (team_id, content, status, scheduled_at, schedule_version)
            VALUES (${team}, ${status}, ${status}, ${scheduledAt}, 1) RETURNING id`,
          ([row]) => row.id
        )
      const target = (postId: string, status: string) =>
        sql`INSERT INTO post_targets (post_id, social_account_id, status) VALUES (${postId}, ${account}, ${status})`
      const attempt = (postId: string, n: number, finished: boolean) =>
        sql`INSERT INTO publish_attempts (post_id, social_account_id, attempt, finished_at, result)
          VALUES (${postId}, ${account}, ${n}, ${finished ? new Date() : null}, ${finished ? "failed" : null})`

      const waiting = yield* post("scheduled", "2030-01-01T09:00:00Z")
      yield* target(waiting, "pending")
      const backingOff = yield* post("publishing", "2026-01-01T09:00:00Z")
      yield* target(backingOff, "pending")
      yield* attempt(backingOff, 1, true)
      const sending = yield* post("publishing", "2026-01-01T09:00:00Z")
      yield* target(sending, "pending")
      yield* attempt(sending, 1, false)
      const sentNow = yield* post("publishing", null)
      yield* target(sentNow, "pending")
      yield* attempt(sentNow, 1, false)
      const done = yield* post("published", "2026-01-01T09:00:00Z")
      yield* target(done, "published")

      yield* runMigrations
      const rows = yield* sql<{ id: string; dueAt: Date | null; now: Date }>`SELECT post_id AS id, due_at AS "dueAt", now() AS now
        FROM post_targets`
      const dueOf = new Map(rows.map((row) => [row.id, row.dueAt]))
      expect(dueOf.get(waiting)).toEqual(new Date("2030-01-01T09:00:00Z"))
      // Its backoff was in the engine's tables, which are gone: it goes out at once.
      expect(dueOf.get(backingOff)!.getTime()).toBeLessThanOrEqual(rows[0].now.getTime())
      // A send under way, a post-now's and a finished target are not the dispatcher's.
      for (const id of [sending, sentNow, done]) expect(dueOf.get(id)).toBeNull()
    }))
})
