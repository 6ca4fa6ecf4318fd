import type { Sharding } from "@effect/cluster"
import type { WorkflowEngine } from "@effect/workflow"
import { Effect, Layer } from "effect"
import { withSystemActor } from "../Access/Authorization.js"
import { PublishRecoveryLive } from "../Publishing/Recovery.js"
import { SchedulerHealth } from "./Health.js"
import { SchedulingRepo } from "./Repo.js"
import { ScheduledPublishing } from "./Steps.js"
import { PublishScheduled, PublishScheduledLive } from "./Workflow.js"

/**
 * Every schedule has its execution: one whose start was lost (the process
 * ended between the schedule's commit and the start) is started now; for the
 * others, starting is a no-op. Runs once when the server starts.
 */
const RecoveryLive = Layer.scopedDiscard(Effect.forkScoped(Effect.gen(function*() {
  const schedules = yield* withSystemActor((yield* SchedulingRepo).schedules)
  yield* Effect.forEach(schedules, (schedule) => PublishScheduled.execute(schedule, { discard: true }), { discard: true })
  if (schedules.length > 0) yield* Effect.logInfo(`Scheduler: ${schedules.length} schedules under way`)
}).pipe(Effect.catchAllCause((cause) => Effect.logError("Scheduler: could not recover the schedules", cause)))))

const WatchdogLive = Layer.scopedDiscard(Effect.forkScoped(Effect.flatMap(SchedulerHealth, (health) => health.watchdog)))

/**
 * The scheduled-publishing workflow, registered on `engine`, with the schedules recovered at start, a
 * watchdog over the engine's backlog, and the recovery of sends no process is finishing; its health is
 * offered to `/health`.
 */
export const layerScheduler = <E, R>(engine: Layer.Layer<WorkflowEngine.WorkflowEngine | Sharding.Sharding, E, R>) =>
  Layer.mergeAll(PublishScheduledLive, RecoveryLive, WatchdogLive, PublishRecoveryLive).pipe(
    Layer.provide([ScheduledPublishing.Default, SchedulingRepo.Default]),
    Layer.provideMerge(SchedulerHealth.Default),
    Layer.provideMerge(engine)
  )
