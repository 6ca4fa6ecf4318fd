import { SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Config, Effect, Redacted } from "effect"
import Pg from "pg"

/** How long the server waits on PostgreSQL before it gives up on a connection or a statement. */
export interface PostgresTimeouts {
  /** Opening a connection, and waiting for a free one in the pool. */
  readonly connectMs: number
  /** One statement. */
  readonly statementMs: number
}

const positiveMs = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be a positive number of milliseconds`, validation: (ms) => ms > 0 })
  )

export const defaultPostgresTimeouts: PostgresTimeouts = { connectMs: 5_000, statementMs: 15_000 }

export const PostgresTimeoutsConfig: Config.Config<PostgresTimeouts> = Config.all({
  connectMs: positiveMs("DATABASE_CONNECT_TIMEOUT_MS", defaultPostgresTimeouts.connectMs),
  statementMs: positiveMs("DATABASE_STATEMENT_TIMEOUT_MS", defaultPostgresTimeouts.statementMs)
})

/**
 * A `pg` pool whose every wait is bounded. PostgreSQL itself ends a statement after
 * `statementMs` and the connection stays usable; the client's own timer, a second later,
 * covers a server that no longer answers at all (stopped, or a network that drops packets).
 */
const makePool = (url: Redacted.Redacted, timeouts: PostgresTimeouts) => {
  const pool = new Pg.Pool({
    connectionString: Redacted.value(url),
    connectionTimeoutMillis: timeouts.connectMs,
    statement_timeout: timeouts.statementMs,
    query_timeout: timeouts.statementMs + 1_000,
    keepAlive: true,
    application_name: "@effect/sql-pg"
  })
  // An idle connection that breaks is dropped by the pool; the next checkout opens another.
  pool.on("error", () => {})
  return pool
}

/**
 * A real PostgreSQL server. Connecting is checked with `SELECT 1`, interruptibly, so
 * that a stop signal is obeyed even while the server does not answer.
 */
export const layerPostgres = (url: Redacted.Redacted, timeouts: PostgresTimeouts = defaultPostgresTimeouts) =>
  PgClient.layerFromPool({
    acquire: Effect.gen(function*() {
      const pool = yield* Effect.acquireRelease(
        Effect.sync(() => makePool(url, timeouts)),
        (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption("1 second"))
      )
      yield* Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) =>
          new SqlError.SqlError({ cause, message: `Could not reach PostgreSQL: ${(cause as Error).message}` })
      })
      return pool
    })
  })
