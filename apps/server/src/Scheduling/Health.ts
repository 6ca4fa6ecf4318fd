import { Sharding, ShardId } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Schedule } from "effect"

/** Of the default group's shards (300), how many this process holds: none means it runs no scheduled work. */
const heldShards = Effect.map(Sharding.Sharding, (sharding) => {
  let held = 0
  for (let shard = 1; shard <= 300; shard++) if (sharding.hasShardId(ShardId.make("default", shard))) held++
  return held
})

// A wake-up or step nobody has taken this long after it was due means consumption has stalled.
const stalledAfter = Duration.minutes(1)

/**
 * The scheduler's state, from the engine's own tables: messages waiting
 * (requests without a final reply, future wake-ups included), and how long
 * the oldest one that is due has waited unclaimed.
 */
export class SchedulerHealth extends Effect.Service<SchedulerHealth>()("SchedulerHealth", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const backlog = sql<{ readonly waiting: number; readonly oldestDueSeconds: number | null }>`
      WITH waiting AS (
        SELECT m.last_read, coalesce(m.deliver_at, (m.id >> 22) + 1735689600000) AS due_ms
        FROM cluster_messages m
        WHERE m.processed = false AND m.kind = 0
          AND NOT EXISTS (SELECT 1 FROM cluster_replies r WHERE r.request_id = m.id AND r.kind = 0)
      )
      SELECT count(*)::int AS waiting,
        (extract(epoch FROM clock_timestamp()) - min(due_ms) FILTER (WHERE last_read IS NULL
          AND due_ms <= extract(epoch FROM clock_timestamp()) * 1000) / 1000)::float8 AS "oldestDueSeconds"
      FROM waiting`.pipe(Effect.map(([row]) => row))

    const check = Effect.gen(function*() {
      const shards = yield* heldShards
      const { oldestDueSeconds, waiting } = yield* backlog
      return { registered: shards > 0, shards, messagesWaiting: waiting, oldestDueSeconds }
    })

    /** Logs, once a minute while it lasts, when due work waits unclaimed: the engine has stopped consuming. */
    const watchdog = check.pipe(
      Effect.tap(({ oldestDueSeconds, registered }) =>
        oldestDueSeconds !== null && oldestDueSeconds > Duration.toSeconds(stalledAfter)
          ? Effect.logWarning(
            `Scheduler: due work has waited ${Math.round(oldestDueSeconds)} s unclaimed` +
              (registered ? "" : "; this process holds no shard")
          )
          : Effect.void
      ),
      Effect.catchAllCause((cause) => Effect.logWarning("Scheduler: the watchdog could not check", cause)),
      Effect.repeat(Schedule.spaced(stalledAfter))
    )

    return { check, watchdog } as const
  })
}) {}
