import { Effect, Layer, Option, Schedule } from "effect"
import { PaymentProvider } from "./PaymentProvider.js"
import { BillingSettings } from "./Settings.js"
import { type MeteredUsage, UsageRepo } from "./UsageRepo.js"

// A claimed batch is reported one call after another, and a call takes at most about 35 s (the Stripe client's 10 s
// timeout × its 3 attempts, and the waits between them): 5 × 35 s = 175 s, within the 300 s lease, so a row is
// claimed again only when its reporter is gone. A round claims batch after batch while they come full, up to 10.
const batch = 5
const batchesPerRound = 10
const leaseSeconds = 300

/**
 * Reports the credits organizations bought beyond their plan's (CreditsRepo records them with the `overage` entry)
 * as events of the plan's Stripe meter, each marked reported once Stripe took it. Rows are claimed (UsageRepo:
 * FOR UPDATE SKIP LOCKED, then a lease), so two server processes do not report one at once; a row reported again
 * after a process died keeps its id as the meter event's identifier and Stripe counts it once. A report that
 * fails is tried again later, after a longer wait each time, behind the others; one Stripe refuses as it is is
 * failed for good, logged once as an error. Every BILLING_RECHARGE_POLL_MS while the plan has a metered price.
 */
export const UsageReporterLive = Layer.scopedDiscard(Effect.gen(function*() {
  const settings = yield* BillingSettings
  const repo = yield* UsageRepo
  const { gateway } = yield* PaymentProvider
  const eventName = Option.flatMapNullable(settings.plan, (plan) => plan.meterEvent)
  if (Option.isNone(gateway) || Option.isNone(eventName)) return
  const provider = gateway.value

  const what = (usage: MeteredUsage) =>
    `reporting ${usage.credits} credits of overage (${usage.id}) of ${
      usage.organizationId === null ? "a deleted organization" : `organization ${usage.organizationId}`
    }, customer ${usage.customerId},`

  const report = (usage: MeteredUsage) =>
    provider.reportUsage({
      identifier: usage.id,
      eventName: eventName.value,
      customerId: usage.customerId,
      credits: usage.credits,
      at: usage.createdAt
    }).pipe(
      Effect.zipRight(repo.reported(usage.id)),
      Effect.catchTag("UsageRefused", ({ message }) =>
        Effect.zipRight(
          Effect.logError(`Billing: ${what(usage)} was refused by Stripe for good, it is not tried again: ${message}`),
          repo.refused(usage.id, message)
        )),
      Effect.catchAllCause((cause) =>
        Effect.zipRight(
          Effect.logWarning(`Billing: ${what(usage)} failed; it is tried again later`, cause),
          repo.failed(usage.id, settings.rechargePollMs)
        )
      )
    )

  const reportDue = (batches: number): Effect.Effect<void> =>
    Effect.flatMap(repo.claimDue(batch, leaseSeconds), (due) =>
      Effect.zipRight(
        Effect.forEach(due, report, { discard: true }),
        due.length === batch && batches > 1 ? Effect.suspend(() => reportDue(batches - 1)) : Effect.void
      ))

  const round = reportDue(batchesPerRound).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("Billing: reading the metered usage to report failed; it is tried again", cause))
  )
  yield* Effect.forkScoped(Effect.repeat(round, Schedule.spaced(settings.rechargePollMs)))
})).pipe(Layer.provide([UsageRepo.Default, PaymentProvider.Default, BillingSettings.Default]))
