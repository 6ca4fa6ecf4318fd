import { SqlClient } from "@effect/sql"
import { Context, Effect, ExecutionStrategy, Exit, Layer, Scope } from "effect"
import { CurrentDeployment } from "../Deployment.js"

/**
 * Server processes that start together on one PostgreSQL database take turns
 * through their schema set-up: migrations make tables with `CREATE TABLE`
 * statements that fail when two sessions run them at once. The turn is a
 * session advisory lock, held from before the migrations until the scheduler
 * is built (`endStartupTurn`), and let go with its session if the process dies.
 */
export class StartupTurn extends Context.Tag("StartupTurn")<StartupTurn, { readonly end: Effect.Effect<void> }>() {}

// Any number that no other advisory lock of this database uses: "postline" in ASCII.
const turnKey = 0x706f73746c696e65n

const takeTurn = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const turn = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
  const connection = yield* Scope.extend(sql.reserve, turn)
  // Tried, not waited on in one statement: a wait would run into the statement timeout.
  let waited = false
  for (;;) {
    const [[taken]] = yield* connection.executeValues(`SELECT pg_try_advisory_lock(${turnKey})`, [])
    if (taken === true) break
    if (!waited) yield* Effect.logInfo("Waiting for another server process to finish setting up the database")
    waited = true
    yield* Effect.sleep("200 millis")
  }
  yield* Scope.addFinalizer(turn, Effect.ignore(connection.executeRaw(`SELECT pg_advisory_unlock(${turnKey})`, [])))
  return { end: Scope.close(turn, Exit.void) }
})

/** The turn on PostgreSQL; the embedded database has one process, which needs none. */
export const StartupTurnLive = Layer.scoped(
  StartupTurn,
  Effect.flatMap(CurrentDeployment, (deployment) =>
    deployment._tag === "Postgres" ? Effect.orDie(takeTurn) : Effect.succeed({ end: Effect.void }))
)

/** Ends this process's turn: built once the scheduler, the last to make tables, is. */
export const EndStartupTurnLive = Layer.effectDiscard(Effect.flatMap(StartupTurn, (turn) => turn.end))
