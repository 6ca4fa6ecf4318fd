import { Effect, Layer } from "effect"
import { AnalyticsSnapshotsLive } from "./Analytics/Snapshots.js"
import { RechargerLive } from "./Billing/Recharger.js"
import { UsageReporterLive } from "./Billing/UsageReporter.js"
import { EventDeliveryLive } from "./EventWebhooks/Delivery.js"
import { Dispatcher, DispatcherLive } from "./Publishing/Dispatcher.js"
import { SchedulerHealth } from "./Publishing/Health.js"
import { PublishRecovery, PublishRecoveryLive } from "./Publishing/Recovery.js"
import { TokenRenewalLive } from "./SocialAccounts/TokenRenewal.js"

const WatchdogLive = Layer.scopedDiscard(Effect.forkScoped(Effect.flatMap(SchedulerHealth, (health) => health.watchdog)))

/**
 * Scheduled publishing in the background of a server process: the dispatch of due targets, a watchdog over
 * what waits, the recovery of sends no process is finishing, the delivery of the organizations' events, the
 * analytics snapshots, billing's recharges and the renewal of accounts' tokens; its health is offered to `/health`.
 */
export const SchedulerLive = Layer.mergeAll(
  DispatcherLive,
  WatchdogLive,
  PublishRecoveryLive,
  EventDeliveryLive,
  AnalyticsSnapshotsLive,
  RechargerLive,
  // Overage bought beyond the plan's credits, reported to the payment provider.
  UsageReporterLive,
  TokenRenewalLive
).pipe(
  Layer.provideMerge(SchedulerHealth.Default),
  Layer.provideMerge(Dispatcher.Default),
  // Built first: the recovery of a sole process reads its start before the dispatcher can begin a send, or it
  // would take the dispatcher's first sends for an earlier process's and send them again.
  Layer.provide(PublishRecovery.Default)
)
