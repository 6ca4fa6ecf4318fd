import { expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Cause, Deferred, Effect, Fiber, Logger } from "effect"
import { layerEmbedded } from "../src/Database/Sql.js"
import Pg from "pg"
import { makeTestServer, raw, signUp, TestServer } from "./support/TestServer.js"
import { postgresAdminUrl, testDatabaseKind } from "./support/TestDatabase.js"

const errorLog: Array<string> = []
const capturingLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ cause, logLevel, message }) => {
    if (logLevel._tag === "Error") errorLog.push(`${String(message)} ${Cause.pretty(cause, { renderErrorCause: true })}`)
  })
)

layer(makeTestServer(capturingLogger), { excludeTestServices: true })("database failures", (it) => {
  it.effect("answer 500 InternalError with a generic message; the details go to the log only", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      const sql = yield* SqlClient.SqlClient
      yield* sql`ALTER TABLE organizations RENAME TO organizations_gone`
      errorLog.length = 0
      const response = yield* raw({ method: "GET", path: "/v1/organizations", token: alice.token })
      yield* sql`ALTER TABLE organizations_gone RENAME TO organizations`
      expect(response.status).toBe(500)
      expect(response.body).toEqual({ _tag: "InternalError", message: "Internal server error" })
      expect(errorLog.join("\n")).toContain(`relation "organizations" does not exist`)
      expect(errorLog.join("\n")).not.toContain(alice.token)
    }))

  it.effect("leave no partial write: an organization is never created without its admin", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      const sql = yield* SqlClient.SqlClient
      yield* sql`ALTER TABLE memberships ADD CONSTRAINT reject_all CHECK (false) NOT VALID`
      const response = yield* raw({ method: "POST", path: "/v1/organizations", token: alice.token, json: { name: "Half" } })
      yield* sql`ALTER TABLE memberships DROP CONSTRAINT reject_all`
      expect(response.status).toBe(500)
      expect(yield* sql`SELECT id FROM organizations WHERE name = 'Half'`).toEqual([])
    }))
})

layer(TestServer, { excludeTestServices: true })("health", (it) => {
  it.effect("answers 200 while the database answers", () =>
    Effect.gen(function*() {
      const response = yield* raw({ method: "GET", path: "/health" })
      expect(response).toMatchObject({ status: 200, body: { status: "ok", database: "up" } })
    }))

  it.effect.skipIf(testDatabaseKind !== "postgres")("answers 503 ServiceUnavailable once the database is gone", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [{ name }] = yield* sql<{ name: string }>`SELECT current_database() AS name`
      yield* Effect.promise(async () => {
        const admin = new Pg.Client({ connectionString: postgresAdminUrl })
        await admin.connect()
        await admin.query(`DROP DATABASE ${name} WITH (FORCE)`)
        await admin.end()
      })
      const response = yield* raw({ method: "GET", path: "/health" })
      expect(response.status).toBe(503)
      expect(response.body).toEqual({ _tag: "ServiceUnavailable", message: "The database does not answer" })
    }))
})

it.live.skipIf(testDatabaseKind !== "embedded")(
  "the embedded database runs two concurrent transactions one after the other",
  () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE events (n serial PRIMARY KEY, label text NOT NULL)`
      const firstStarted = yield* Deferred.make<void>()
      const log = (label: string) => sql`INSERT INTO events (label) VALUES (${label})`
      const first = yield* Effect.gen(function*() {
        yield* log("first:begin")
        yield* Deferred.succeed(firstStarted, undefined)
        yield* Effect.sleep("50 millis")
        yield* log("first:end")
      }).pipe(sql.withTransaction, Effect.fork)
      yield* Deferred.await(firstStarted)
      // Starts while the first transaction is open, so it must wait for it.
      const second = yield* Effect.all([log("second:begin"), log("second:end")]).pipe(sql.withTransaction, Effect.fork)
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      const rows = yield* sql<{ label: string }>`SELECT label FROM events ORDER BY n`
      expect(rows.map((row) => row.label)).toEqual(["first:begin", "first:end", "second:begin", "second:end"])
    }).pipe(Effect.provide(layerEmbedded("memory://")))
)

it.live.skipIf(testDatabaseKind !== "embedded")(
  "the embedded database keeps a small buffer pool, since it lives in the server's own memory",
  () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [setting] = yield* sql<{ shared_buffers: string }>`SHOW shared_buffers`
      expect(setting.shared_buffers).toBe("16MB")
    }).pipe(Effect.provide(layerEmbedded("memory://")))
)
