import { Effect, Layer, Option, Schedule } from "effect"
import { PaymentProvider } from "./PaymentProvider.js"
import { BillingSettings } from "./Settings.js"
import { type MeteredUsage, UsageRepo } from "./UsageRepo.js"

const batch = 50
// Longer than a Stripe call with the SDK's retries: a row is claimed again only when its reporter is gone.
const leaseSeconds = 300

/**
 * Reports the credits organizations bought beyond their plan's (CreditsRepo records them with the `overage` entry)
 * as events of the plan's Stripe meter, each marked reported once Stripe took it. Rows are claimed (UsageRepo:
 * FOR UPDATE SKIP LOCKED, then a lease), so two server processes do not report one at once; a row reported again
 * after a process died keeps its id as the meter event's identifier and Stripe counts it once. A report that
 * fails is tried again later, after a longer wait each time, behind the others. Every BILLING_RECHARGE_POLL_MS
 * while the plan has a metered price.
 */
export const UsageReporterLive = Layer.scopedDiscard(Effect.gen(function*() {
  const settings = yield* BillingSettings
  const repo = yield* UsageRepo
  const { gateway } = yield* PaymentProvider
  const eventName = Option.flatMapNullable(settings.plan, (plan) => plan.meterEvent)
  if (Option.isNone(gateway) || Option.isNone(eventName)) return
  const provider = gateway.value

  const report = (usage: MeteredUsage) =>
    provider.reportUsage({
      identifier: usage.id,
      eventName: eventName.value,
      customerId: usage.customerId,
      credits: usage.credits,
      at: usage.createdAt
    }).pipe(
      Effect.zipRight(repo.reported(usage.id)),
      Effect.catchAllCause((cause) =>
        Effect.zipRight(
          Effect.logWarning(
            `Billing: reporting ${usage.credits} credits of overage of organization ${usage.organizationId} failed; it is tried again later`,
            cause
          ),
          repo.failed(usage.id, settings.rechargePollMs)
        )
      )
    )

  const round = Effect.flatMap(repo.claimDue(batch, leaseSeconds), (due) => Effect.forEach(due, report, { discard: true })).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("Billing: reading the metered usage to report failed; it is tried again", cause))
  )
  yield* Effect.forkScoped(Effect.repeat(round, Schedule.spaced(settings.rechargePollMs)))
})).pipe(Layer.provide([UsageRepo.Default, PaymentProvider.Default, BillingSettings.Default]))
