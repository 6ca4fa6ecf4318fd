import { Effect, Layer, Option, Schedule } from "effect"
import { transactionally } from "../Database/Transaction.js"
import { RechargePayment } from "./PaymentGateway.js"
import { PaymentProvider } from "./PaymentProvider.js"
import { Recharges } from "./Recharges.js"
import { type DueRecharge, RechargesRepo, type StartedRecharge } from "./RechargesRepo.js"
import { BillingRepo } from "./Repo.js"
import { BillingSettings, type PackSetting } from "./Settings.js"

const batch = 20
const maxFailures = 5
const pruneBatch = 500

/**
 * A started recharge whose webhook has not come 10 minutes after its start is looked up at the provider, whatever
 * the poll: webhooks come within seconds, and one this late is lost or its endpoint misconfigured.
 */
const lookUpAfterMs = 10 * 60 * 1000

/**
 * A recharge still undecided a day after its start is ended as failed, its payment canceled when it still can be: it
 * would otherwise keep auto-recharge waiting for good. Should the payment complete after all, its credits still come.
 */
const giveUpAfterHours = 24

/**
 * Starts the recharges that spends decided (CreditsRepo marks them in the statement of the spend): one
 * off-session payment per decision, its idempotency key the decision's token, so that a start repeated after a
 * crash, or by another process, is the same payment. The credits come with the payment's webhook; a payment
 * the provider refuses ends the recharge and turns auto-recharge off, with the reason kept. A started recharge
 * whose webhook does not come is looked up at the provider (Recharges.ts: a payment's credits come once, whoever
 * sees it paid), and given up after a day. Every BILLING_RECHARGE_POLL_MS while billing is on; each round also
 * forgets payment events over 30 days old.
 */
export const RechargerLive = Layer.scopedDiscard(Effect.gen(function*() {
  const settings = yield* BillingSettings
  const repo = yield* BillingRepo
  const rechargesRepo = yield* RechargesRepo
  const recharges = yield* Recharges
  const { gateway } = yield* PaymentProvider
  if (Option.isNone(gateway)) return
  const provider = gateway.value

  const start = (due: DueRecharge) => {
    const pack = settings.packs.find((pack) => pack.credits === due.credits)
    const { customerId, paymentMethodId } = due
    if (pack === undefined || customerId === null || paymentMethodId === null) {
      const reason = pack === undefined
        ? `no pack of ${due.credits} credits is on sale`
        : customerId === null
        ? "the organization has no customer at the payment provider"
        : "no saved payment method"
      return rechargesRepo.rechargeEnded(due.organizationId, due.token, `The recharge could not start: ${reason}`)
    }
    // Claimed first: auto-recharge turned off before this starts no payment.
    return Effect.flatMap(rechargesRepo.claimRecharge(due.organizationId, due.token), (claimed) =>
      claimed ? pay(due, pack, customerId, paymentMethodId) : Effect.void)
  }

  const pay = (due: DueRecharge, pack: PackSetting, customerId: string, paymentMethodId: string) =>
    provider.recharge({
      customerId,
      paymentMethodId,
      organizationId: due.organizationId,
      pack,
      token: due.token
    }).pipe(
      Effect.flatMap(({ paymentIntentId }) => rechargesRepo.rechargeStarted(due.organizationId, due.token, paymentIntentId)),
      Effect.catchTag("PaymentDeclined", (declined) =>
        rechargesRepo.rechargeEnded(due.organizationId, due.token, `The recharge failed: ${declined.message}`))
    )

  /**
   * A provider that does not answer leaves the recharge due, tried again after a longer wait each time, behind
   * the others; after `maxFailures` it ends as a declined one. One failing recharge never holds up another.
   */
  const attempt = (due: DueRecharge) =>
    start(due).pipe(
      Effect.catchAllCause((cause) =>
        Effect.gen(function*() {
          yield* Effect.logWarning(`Billing: starting the recharge of organization ${due.organizationId} failed`, cause)
          const failures = yield* rechargesRepo.rechargeAttemptFailed(due.organizationId, due.token)
          if (failures >= maxFailures) {
            yield* rechargesRepo.rechargeEnded(
              due.organizationId,
              due.token,
              `The recharge could not start: the payment provider failed ${failures} times`
            )
          }
        })
      )
    )

  const startDue = Effect.flatMap(
    rechargesRepo.dueRecharges(batch, settings.rechargePollMs),
    (due) => Effect.forEach(due, attempt, { discard: true })
  ).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("Billing: reading the due recharges failed; they are tried again", cause))
  )

  /**
   * The payment's state at the provider ends the recharge as its webhook would have; undecided, or the provider not
   * answering, it is asked again after a longer wait (RechargesRepo.startedRecharges). Overdue, it is ended as
   * failed: an undecided payment is canceled first (a cancel the provider refuses, the payment having moved on,
   * leaves it to the next look).
   */
  const lookUp = (started: StartedRecharge) => {
    const { organizationId, paymentIntentId, token } = started
    const checked = rechargesRepo.rechargeChecked(organizationId, token)
    const givenUp = (state: string) =>
      recharges.failed(
        organizationId,
        token,
        `Stripe gave no outcome for payment ${paymentIntentId} in ${giveUpAfterHours} hours (${state})`
      )
    return provider.rechargePayment(paymentIntentId).pipe(
      Effect.flatMap(RechargePayment.$match({
        Paid: ({ credits, reference }) => recharges.paid(organizationId, token, credits, reference).pipe(transactionally),
        Failed: ({ reason }) => recharges.failed(organizationId, token, reason),
        Pending: ({ cancelable, status }) =>
          !started.overdue ? checked : !cancelable ? givenUp(status) : provider.cancelRecharge(paymentIntentId).pipe(
            Effect.matchCauseEffect({
              onFailure: (cause) =>
                Effect.zipRight(Effect.logWarning(`Billing: canceling the recharge of organization ${organizationId} failed`, cause), checked),
              onSuccess: () => givenUp(`${status}, canceled`)
            })
          )
      })),
      Effect.catchAllCause((cause) =>
        Effect.zipRight(
          Effect.logWarning(`Billing: looking up the recharge of organization ${organizationId} failed`, cause),
          started.overdue ? givenUp("the lookup failed") : checked
        )
      )
    )
  }

  const lookUpStarted = Effect.flatMap(
    rechargesRepo.startedRecharges(batch, lookUpAfterMs, giveUpAfterHours * 60 * 60 * 1000),
    (started) => Effect.forEach(started, lookUp, { discard: true })
  ).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("Billing: reading the started recharges failed; they are looked up again", cause))
  )
  // The provider's events are kept to act once on each; a round also forgets a batch of old ones.
  const prune = repo.pruneEvents(pruneBatch).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("Billing: forgetting old payment events failed", cause))
  )
  const round = Effect.zipRight(Effect.zipRight(startDue, lookUpStarted), prune)
  yield* Effect.forkScoped(Effect.repeat(round, Schedule.spaced(settings.rechargePollMs)))
})).pipe(Layer.provide([BillingRepo.Default, RechargesRepo.Default, Recharges.Default, PaymentProvider.Default, BillingSettings.Default]))
