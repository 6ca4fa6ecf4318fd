import { BadRequest, NotFound, type OrganizationId } from "@postline/domain"
import { type Data, Effect, Option } from "effect"
import { withSystemActor } from "../../Access/Authorization.js"
import { CreditsRepo } from "../../Credits/Repo.js"
import { transactionally } from "../../Database/Transaction.js"
import { PaymentEvent, type ReceivedEvent } from "../PaymentGateway.js"
import { PaymentProvider } from "../PaymentProvider.js"
import { Recharges } from "../Recharges.js"
import { BillingRepo } from "../Repo.js"
import { BillingSettings } from "../Settings.js"

/**
 * The payment provider's events. An event that acts is recorded by its id in the transaction of what it does:
 * a replay, or a concurrent delivery, finds it recorded (the second insert waits for the first's commit) and
 * does nothing. Events the server does not use are acknowledged and not recorded.
 */
export class PaymentEventsReceiver extends Effect.Service<PaymentEventsReceiver>()("PaymentEventsReceiver", {
  effect: Effect.gen(function*() {
    const repo = yield* BillingRepo
    const credits = yield* CreditsRepo
    const recharges = yield* Recharges
    const settings = yield* BillingSettings
    const { gateway } = yield* PaymentProvider
    const planName = Option.getOrNull(Option.map(settings.plan, (plan) => plan.name))
    const includedCredits = Option.match(settings.plan, { onNone: () => 0, onSome: (plan) => plan.includedCredits })

    const grant = (organizationId: OrganizationId, amount: number, note: string) =>
      Effect.flatMap(repo.exists(organizationId), (exists) =>
        exists
          ? Effect.asVoid(withSystemActor(credits.grant(organizationId, amount, note)))
          : Effect.logWarning(`Billing: credits paid for organization ${organizationId}, which no longer exists (${note})`))

    /**
     * A pack's credits come once per checkout session, whichever of its events tells it paid first (`completed`,
     * `async_payment_succeeded`, each possibly redelivered under another event id): the session is recorded among the
     * provider's events (`checkout:<id>`), as a recharge's payment is (Recharges.ts). Only to the organization whose
     * customer paid: a session naming another organization in its metadata grants nothing.
     */
    const creditsPaid = ({ credits, customerId, organizationId, reference }: Data.TaggedEnum.Value<PaymentEvent, "CreditsPaid">) =>
      Effect.gen(function*() {
        const payer = customerId === null ? Option.none() : yield* repo.organizationOfCustomer(customerId)
        if (Option.getOrNull(payer) !== organizationId) {
          const whose = Option.match(payer, { onNone: () => "no organization's", onSome: (other) => `organization ${other}'s` })
          return yield* Effect.logWarning(
            `Billing: checkout ${reference} names organization ${organizationId} but was paid by ${customerId ?? "no customer"}, ` +
              `${whose} Stripe customer: its ${credits} credits are not granted`
          )
        }
        if (yield* repo.recordEvent(`checkout:${reference}`, "checkout.paid")) {
          yield* grant(organizationId, credits, `Credit pack, checkout ${reference}`)
        }
      })

    /**
     * A live subscription besides the organization's (a second checkout paid in some way): its events are not used,
     * and the customer pays for both; an operator cancels one, at the provider.
     */
    const warnOfSecond = (customerId: string, subscriptionId: string, status: string) =>
      Effect.flatMap(repo.subscriptionOfCustomer(customerId), (stored) =>
        Option.isSome(stored) && stored.value.subscriptionId !== null && stored.value.subscriptionId !== subscriptionId &&
          [status, stored.value.status].every((status) => status !== "canceled" && status !== "inactive")
          ? Effect.logWarning(
            `Billing: organization ${stored.value.organizationId} has two subscriptions: ${stored.value.subscriptionId} ` +
              `(${stored.value.status}, the one used) and ${subscriptionId} (${status}, ignored); cancel one at Stripe`
          )
          : Effect.void)

    const act = ({ createdAt, event }: ReceivedEvent) =>
      PaymentEvent.$match(event, {
        CreditsPaid: creditsPaid,
        PaymentMethodSaved: ({ organizationId, paymentMethodId }) => repo.savePaymentMethod(organizationId, paymentMethodId),
        SubscriptionChanged: ({ customerId, ...state }) =>
          Effect.flatMap(repo.setSubscription(customerId, { ...state, plan: planName }, createdAt), (set) =>
            set ? Effect.void : warnOfSecond(customerId, state.subscriptionId, state.status)),
        SubscriptionPaymentFailed: ({ customerId, subscriptionId }) => repo.markPastDue(customerId, subscriptionId, createdAt),
        PlanPeriodPaid: ({ customerId, reference }) =>
          includedCredits === 0 ? Effect.void : Effect.flatMap(repo.organizationOfCustomer(customerId), Option.match({
            onNone: () => Effect.logWarning(`Billing: invoice ${reference} paid by ${customerId}, no organization's customer`),
            onSome: (organizationId) => grant(organizationId, includedCredits, `Plan credits, invoice ${reference}`)
          })),
        // The recharger may have found the payment at the provider first (the webhook was late): then nothing more.
        RechargePaid: ({ credits, organizationId, reference, token }) => recharges.paid(organizationId, token, credits, reference),
        RechargeFailed: ({ organizationId, reason, token }) => recharges.failed(organizationId, token, reason),
        Ignored: () => Effect.void
      })

    /** With billing off there is no endpoint (404), whatever the request; with it on an unsigned one is 400. */
    const receive = (body: Uint8Array, signature: string | undefined) =>
      Effect.gen(function*() {
        const provider = yield* Option.match(gateway, {
          onNone: () => new NotFound({ message: "Billing is off on this server: it takes no payment events" }),
          onSome: Effect.succeed
        })
        if (signature === undefined) {
          return yield* new BadRequest({ message: "The Stripe-Signature header is missing", reason: "invalid_signature" })
        }
        const received = yield* provider.receive(body, signature).pipe(
          Effect.tapErrorTag("UnreadableEvent", (error) => Effect.logWarning(`Billing: ${error.message}`)),
          Effect.mapError((error) =>
            new BadRequest({
              message: error.message,
              reason: error._tag === "InvalidSignature" ? "invalid_signature" : "unreadable_event"
            })
          )
        )
        if (received.event._tag === "Ignored") return
        yield* Effect.gen(function*() {
          if (yield* repo.recordEvent(received.id, received.type)) yield* act(received)
        }).pipe(transactionally)
      })

    return { receive } as const
  }),
  dependencies: [BillingRepo.Default, CreditsRepo.Default, Recharges.Default, BillingSettings.Default, PaymentProvider.Default]
}) {}
