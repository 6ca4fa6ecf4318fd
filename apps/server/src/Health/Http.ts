import { HttpApiBuilder } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { PostlineApi, ServiceUnavailable } from "@postline/domain"
import { Effect } from "effect"

export const HealthHttpLive = HttpApiBuilder.group(PostlineApi, "health", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return handlers.handle("health", () =>
      sql`SELECT 1`.pipe(
        Effect.timeout("2 seconds"),
        Effect.as({ status: "ok", database: "up" } as const),
        Effect.catchAll((error) =>
          Effect.zipRight(
            Effect.logWarning("Health check: the database does not answer", error),
            new ServiceUnavailable({ message: "The database does not answer" })
          )
        )
      ))
  }))
