import { Effect, Option, Redacted } from "effect"
import Stripe from "stripe"
import {
  CheckoutExpiry,
  InvalidSignature,
  PaymentDeclined,
  type PaymentGateway,
  providerCall,
  type ReceivedEvent,
  RechargePayment,
  UnreadableEvent,
  UsageRefused
} from "./PaymentGateway.js"
import type { PlanSetting, StripeSettings } from "./Settings.js"
import { autoRecharge, creditPack, creditsOf, idOf, meaningOf } from "./StripeEvents.js"

/** A Stripe call; a failure to reach Stripe, or one it refuses, is a defect, logged with what was asked. */
const call = <A>(what: string, run: () => Promise<A>) =>
  Effect.tryPromise({ try: run, catch: (cause) => cause }).pipe(
    Effect.tapError((cause) => Effect.logError(`Stripe: ${what} failed`, cause)),
    Effect.orDie
  )

/**
 * A call of a recharge: a declined card, or a price or payment method Stripe does not have, fails it for good
 * (trying again would not help); not reaching Stripe is a defect, tried again later.
 */
const refusable = <A>(run: () => Promise<A>) =>
  Effect.tryPromise({ try: run, catch: (cause) => cause }).pipe(
    Effect.catchAll((cause) =>
      cause instanceof Stripe.errors.StripeCardError || cause instanceof Stripe.errors.StripeInvalidRequestError
        ? new PaymentDeclined({ message: cause.message })
        : Effect.die(cause)
    )
  )

// The undecided payments Stripe still cancels (processing ones it does not).
const cancelableStatuses = new Set(["requires_payment_method", "requires_confirmation", "requires_action", "requires_capture"])

/** The Stripe adapter, through the official SDK, at `settings.apiUrl`. */
export const makeStripeGateway = (settings: StripeSettings, plan: Option.Option<PlanSetting>): PaymentGateway => {
  const url = settings.apiUrl
  const protocol = url.protocol === "http:" ? "http" : "https"
  const stripe = new Stripe(Redacted.value(settings.secretKey), {
    host: url.hostname,
    port: url.port === "" ? (protocol === "http" ? 80 : 443) : Number(url.port),
    protocol,
    // Each call ends within providerCallMs (the SDK's default waits 80 seconds an attempt): what a subscription
    // checkout's claim lasts is counted from it.
    timeout: providerCall.timeoutMs,
    maxNetworkRetries: providerCall.retries,
    telemetry: false
  })
  const webhookSecret = Redacted.value(settings.webhookSecret)

  return {
    createCustomer: (organization) =>
      Effect.map(
        call("creating a customer", () =>
          stripe.customers.create(
            { name: organization.name, metadata: { organizationId: organization.id } },
            // Two concurrent first checkouts make one customer.
            { idempotencyKey: `postline-customer-${organization.id}` }
          )),
        (customer) => customer.id
      ),

    checkoutPack: ({ customerId, organizationId, pack, returnUrl }) =>
      Effect.map(
        call("creating a checkout session", () =>
          stripe.checkout.sessions.create({
            mode: "payment",
            customer: customerId,
            client_reference_id: organizationId,
            line_items: [{ price: pack.priceId, quantity: 1 }],
            metadata: { purpose: creditPack, organizationId, credits: String(pack.credits) },
            // The card is kept for auto-recharge.
            payment_intent_data: { setup_future_usage: "off_session", metadata: { purpose: creditPack, organizationId } },
            success_url: returnUrl,
            cancel_url: returnUrl
          })),
        (session) => session.url!
      ),

    checkoutPlan: ({ customerId, organizationId, plan, returnUrl }) =>
      Effect.map(
        call("creating a subscription checkout session", () =>
          stripe.checkout.sessions.create({
            mode: "subscription",
            customer: customerId,
            client_reference_id: organizationId,
            line_items: [
              { price: plan.priceId, quantity: 1 },
              ...(plan.meteredPriceId === null ? [] : [{ price: plan.meteredPriceId }])
            ],
            subscription_data: { metadata: { organizationId } },
            success_url: returnUrl,
            cancel_url: returnUrl
          })),
        (session) => ({ sessionId: session.id, url: session.url! })
      ),

    // Stripe refuses to expire a session that is not open: then what it is says whether it was paid. A session it
    // does not know (made with another account, or in the other mode) can be paid by no one.
    expireCheckout: (sessionId) =>
      Effect.tryPromise({ try: () => stripe.checkout.sessions.expire(sessionId), catch: (cause) => cause }).pipe(
        Effect.as<CheckoutExpiry>(CheckoutExpiry.Expired()),
        Effect.catchIf(
          (cause) => cause instanceof Stripe.errors.StripeInvalidRequestError && cause.code === "resource_missing",
          () => Effect.succeed(CheckoutExpiry.Expired())
        ),
        Effect.catchIf((cause) => cause instanceof Stripe.errors.StripeInvalidRequestError, () =>
          Effect.flatMap(
            call("reading a checkout session", () => stripe.checkout.sessions.retrieve(sessionId)),
            (session): Effect.Effect<CheckoutExpiry> =>
              session.status === "complete"
                ? Effect.succeed(CheckoutExpiry.Completed({ subscriptionId: idOf(session.subscription) }))
                : session.status === "expired"
                ? Effect.succeed(CheckoutExpiry.Expired())
                : Effect.dieMessage(`Stripe: the checkout session ${sessionId} is ${session.status} and could not be expired`)
          )),
        Effect.tapError((cause) => Effect.logError("Stripe: expiring a checkout session failed", cause)),
        Effect.orDie
      ),

    portal: ({ customerId, returnUrl }) =>
      Effect.map(
        call("creating a portal session", () => stripe.billingPortal.sessions.create({ customer: customerId, return_url: returnUrl })),
        (session) => session.url
      ),

    recharge: ({ customerId, organizationId, pack, paymentMethodId, token }) =>
      Effect.gen(function*() {
        const price = yield* refusable(() => stripe.prices.retrieve(pack.priceId))
        if (price.unit_amount === null) {
          return yield* new PaymentDeclined({ message: `The price ${pack.priceId} has no fixed amount` })
        }
        const intent = yield* refusable(() =>
          stripe.paymentIntents.create({
            amount: price.unit_amount!,
            currency: price.currency,
            customer: customerId,
            payment_method: paymentMethodId,
            off_session: true,
            confirm: true,
            metadata: { purpose: autoRecharge, organizationId, token, credits: String(pack.credits) }
          }, { idempotencyKey: `postline-recharge-${token}` })
        )
        return { paymentIntentId: intent.id }
      }),

    rechargePayment: (paymentIntentId) =>
      Effect.flatMap(call("reading a recharge's payment", () => stripe.paymentIntents.retrieve(paymentIntentId)), (intent): Effect.Effect<RechargePayment> => {
        switch (intent.status) {
          case "succeeded": {
            const credits = creditsOf(intent.metadata.credits)
            return Option.isNone(credits)
              ? Effect.dieMessage(`Stripe: the payment ${intent.id} names no credits`)
              : Effect.succeed(RechargePayment.Paid({ credits: credits.value, reference: intent.id }))
          }
          // An off-session payment is not tried again with another method: it failed for good.
          case "requires_payment_method":
            return Effect.succeed(RechargePayment.Failed({ reason: intent.last_payment_error?.message ?? "The payment failed" }))
          case "canceled":
            return Effect.succeed(RechargePayment.Failed({
              reason: `The payment was canceled${intent.cancellation_reason === null ? "" : ` (${intent.cancellation_reason})`}`
            }))
          default:
            return Effect.succeed(RechargePayment.Pending({ status: intent.status, cancelable: cancelableStatuses.has(intent.status) }))
        }
      }),

    cancelRecharge: (paymentIntentId) =>
      Effect.asVoid(call("canceling a recharge's payment", () => stripe.paymentIntents.cancel(paymentIntentId))),

    // Verified first, read apart: a verified event that cannot be read is said so, not blamed on the signature.
    receive: (body, signature) =>
      Effect.try({
        try: () => stripe.webhooks.constructEvent(Buffer.from(body), signature, webhookSecret),
        catch: () => new InvalidSignature({ message: "The Stripe-Signature header does not match the body" })
      }).pipe(Effect.flatMap((event) =>
        Effect.try({
          try: (): ReceivedEvent => ({
            id: event.id,
            type: event.type,
            createdAt: new Date(event.created * 1000),
            event: meaningOf(event, plan)
          }),
          catch: () =>
            new UnreadableEvent({ message: `The event ${event.id} (${event.type}) is signed but its content cannot be read` })
        })
      )),

    // The meter's default mapping: the customer and the value in the payload. The identifier is also the request's
    // idempotency key, so that a report repeated within Stripe's 24 hours is answered as the first was. A request
    // Stripe finds invalid (a timestamp over 35 days old, an unknown event name) is refused for good; anything else
    // (not reaching Stripe, its 5xx) is a defect, left to the reporter to log and try again.
    reportUsage: ({ at, credits, customerId, eventName, identifier }) =>
      Effect.tryPromise({
        try: () =>
          stripe.billing.meterEvents.create({
            event_name: eventName,
            payload: { stripe_customer_id: customerId, value: String(credits) },
            identifier,
            timestamp: Math.floor(at.getTime() / 1000)
          }, { idempotencyKey: `postline-usage-${identifier}` }),
        catch: (cause) => cause
      }).pipe(
        Effect.asVoid,
        Effect.catchAll((cause) =>
          cause instanceof Stripe.errors.StripeInvalidRequestError ? new UsageRefused({ message: cause.message }) : Effect.die(cause)
        )
      )
  }
}
