import { HttpApiBuilder } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { PostlineApi, ServiceUnavailable } from "@postline/domain"
import { Effect } from "effect"
import { SchedulerHealth } from "../Publishing/Health.js"

export const HealthHttpLive = HttpApiBuilder.group(PostlineApi, "health", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const scheduler = yield* SchedulerHealth
    return handlers.handle("health", () =>
      sql`SELECT 1`.pipe(
        Effect.zipRight(scheduler.check),
        // Cancelling a statement asks the database, which may not answer either: answer without waiting.
        Effect.disconnect,
        Effect.timeout("2 seconds"),
        Effect.map((status) => ({ status: "ok", database: "up", scheduler: status }) as const),
        Effect.catchAll((error) =>
          Effect.zipRight(
            Effect.logWarning("Health check: the database does not answer", error),
            new ServiceUnavailable({ message: "The database does not answer" })
          )
        )
      ))
  }))
