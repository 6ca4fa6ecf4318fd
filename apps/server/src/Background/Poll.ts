import { Config, Duration } from "effect"

/**
 * How long each background worker (the dispatch of due posts, event deliveries, analytics snapshots) waits
 * after a look that found nothing to do (`SCHEDULER_POLL_MS`): it bounds how late due work can start.
 */
export const pollInterval = Config.integer("SCHEDULER_POLL_MS").pipe(
  Config.withDefault(1000),
  Config.validate({ message: "must be a whole number of milliseconds, at least 10", validation: (n) => n >= 10 }),
  Config.map(Duration.millis)
)
