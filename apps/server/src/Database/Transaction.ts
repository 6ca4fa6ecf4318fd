import { SqlClient, SqlError } from "@effect/sql"
import { Cause, Effect, Option } from "effect"

// PostgreSQL's deadlock_detected and serialization_failure: it aborted one side, which may simply run again.
const retryableCodes = new Set(["40P01", "40001"])

const sqlErrorIn = (cause: Cause.Cause<unknown>) =>
  Option.orElse(Cause.failureOption(cause), () => Cause.dieOption(cause)).pipe(
    Option.filter((error): error is SqlError.SqlError => error instanceof SqlError.SqlError)
  )

const isRetryable = (cause: Cause.Cause<unknown>) =>
  Option.exists(sqlErrorIn(cause), (error) => retryableCodes.has((error.cause as { code?: string } | undefined)?.code ?? ""))

/**
 * Runs `self` as one transaction. Permission checks inside lock the rows they
 * read, so that a concurrent change of role waits for the write that relied on
 * it; when two such transactions wait on each other, PostgreSQL aborts one,
 * which then runs again (up to 3 times). Database failures are defects: the
 * edge answers them with 500.
 */
export const transactionally = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, SqlError.SqlError>, R | SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    // A plain catch rather than `Effect.retry`, whose schedule would be built for every transaction that succeeds.
    const attempt = (retriesLeft: number): Effect.Effect<A, E | SqlError.SqlError, R> =>
      Effect.catchAllCause(
        sql.withTransaction(self),
        (cause) => retriesLeft > 0 && isRetryable(cause) ? attempt(retriesLeft - 1) : Effect.failCause(cause)
      )
    return attempt(3).pipe(Effect.catchIf((error: unknown) => error instanceof SqlError.SqlError, Effect.die))
  }) as Effect.Effect<A, Exclude<E, SqlError.SqlError>, R | SqlClient.SqlClient>
