import { Effect, Layer } from "effect"
import { Dispatcher, DispatcherLive } from "./Dispatcher.js"
import { SchedulerHealth } from "./Health.js"
import { PublishRecoveryLive } from "./Recovery.js"

const WatchdogLive = Layer.scopedDiscard(Effect.forkScoped(Effect.flatMap(SchedulerHealth, (health) => health.watchdog)))

/**
 * Scheduled publishing in the background of a server process: the dispatch of due targets, a watchdog over
 * what waits, and the recovery of sends no process is finishing; its health is offered to `/health`.
 */
export const SchedulerLive = Layer.mergeAll(DispatcherLive, WatchdogLive, PublishRecoveryLive).pipe(
  Layer.provideMerge(SchedulerHealth.Default),
  Layer.provideMerge(Dispatcher.Default)
)
