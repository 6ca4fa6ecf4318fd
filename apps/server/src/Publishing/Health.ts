import { Duration, Effect, Schedule } from "effect"
import { DispatchRepo } from "./DispatchRepo.js"
import { Dispatcher } from "./Dispatcher.js"

// A target nobody has taken this long after it was due means dispatch has stalled.
const stalledAfter = Duration.minutes(1)

/** The scheduler's state: what this process is sending, and what is due and not yet taken by any process. */
export class SchedulerHealth extends Effect.Service<SchedulerHealth>()("SchedulerHealth", {
  effect: Effect.gen(function*() {
    const repo = yield* DispatchRepo
    const dispatcher = yield* Dispatcher

    const check = Effect.map(repo.backlog, ({ due, oldestDueSeconds }) => ({
      sending: dispatcher.inFlight(),
      concurrency: dispatcher.concurrency,
      dueWaiting: due,
      oldestDueSeconds
    }))

    /** Logs, once a minute while it lasts, when due work waits unclaimed: dispatch has stopped. */
    const watchdog = check.pipe(
      Effect.tap(({ oldestDueSeconds }) =>
        oldestDueSeconds !== null && oldestDueSeconds > Duration.toSeconds(stalledAfter)
          ? Effect.logWarning(`Scheduler: due work has waited ${Math.round(oldestDueSeconds)} s unclaimed`)
          : Effect.void
      ),
      Effect.catchAllCause((cause) => Effect.logWarning("Scheduler: the watchdog could not check", cause)),
      Effect.repeat(Schedule.spaced(stalledAfter))
    )

    return { check, watchdog } as const
  }),
  dependencies: [DispatchRepo.Default]
}) {}
