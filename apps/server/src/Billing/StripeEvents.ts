import { OrganizationId, type SubscriptionStatus } from "@postline/domain"
import { Option, Schema } from "effect"
import type Stripe from "stripe"
import { PaymentEvent } from "./PaymentGateway.js"
import type { PlanSetting } from "./Settings.js"

// What the server writes into the metadata of what it asks Stripe for, and reads back from its events.
export const creditPack = "credit_pack"
export const autoRecharge = "auto_recharge"

const statuses: Record<string, typeof SubscriptionStatus.Type> = {
  active: "active",
  trialing: "trialing",
  past_due: "past_due",
  canceled: "canceled",
  paused: "paused",
  unpaid: "unpaid"
}

export const idOf = (value: string | { readonly id: string } | null | undefined) =>
  value === null || value === undefined ? null : typeof value === "string" ? value : value.id

const dateOf = (seconds: number | null | undefined) => (seconds === null || seconds === undefined ? null : new Date(seconds * 1000))

/** The organization the server named in the metadata; anything else is no organization of ours. */
const organizationOf = (metadata: Stripe.Metadata | null | undefined) =>
  Option.getOrUndefined(Schema.decodeUnknownOption(OrganizationId)(metadata?.organizationId))

export const creditsOf = (text: string | undefined) => {
  const credits = Number(text)
  return Number.isSafeInteger(credits) && credits > 0 ? Option.some(credits) : Option.none()
}

const subscriptionEvent = (subscription: Stripe.Subscription, plan: Option.Option<PlanSetting>) => {
  const items = subscription.items.data
  const metered = Option.flatMap(plan, (plan) => Option.fromNullable(items.find((item) => item.price.id === plan.meteredPriceId)))
  return PaymentEvent.SubscriptionChanged({
    customerId: idOf(subscription.customer)!,
    subscriptionId: subscription.id,
    status: statuses[subscription.status] ?? "inactive",
    startedAt: dateOf(subscription.start_date),
    endsAt: dateOf(subscription.ended_at ?? subscription.cancel_at),
    currentPeriodEnd: dateOf(items[0]?.current_period_end),
    meteredItemId: Option.getOrNull(Option.map(metered, (item) => item.id)),
    paymentMethodId: idOf(subscription.default_payment_method)
  })
}

const periodReasons = new Set(["subscription_create", "subscription_cycle"])

/** The subscription an invoice belongs to, or null for a one-off invoice. */
const subscriptionOf = (invoice: Stripe.Invoice) => idOf(invoice.parent?.subscription_details?.subscription)

/** What a Stripe event means here; anything else is acknowledged and ignored. */
export const meaningOf = (event: Stripe.Event, plan: Option.Option<PlanSetting>): PaymentEvent => {
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded": {
      const session = event.data.object
      const organizationId = organizationOf(session.metadata)
      const credits = creditsOf(session.metadata?.credits)
      // A session paid later (a bank transfer) completes unpaid; its async_payment_succeeded brings the credits.
      if (session.metadata?.purpose !== creditPack || session.payment_status !== "paid" || !organizationId || Option.isNone(credits)) {
        return PaymentEvent.Ignored()
      }
      return PaymentEvent.CreditsPaid({
        organizationId,
        customerId: idOf(session.customer),
        credits: credits.value,
        reference: session.id
      })
    }
    case "payment_intent.succeeded": {
      const intent = event.data.object
      const { purpose, token } = intent.metadata
      const organizationId = organizationOf(intent.metadata)
      const paymentMethodId = idOf(intent.payment_method)
      if (!organizationId) return PaymentEvent.Ignored()
      if (purpose === autoRecharge && token) {
        const credits = creditsOf(intent.metadata.credits)
        return Option.isNone(credits)
          ? PaymentEvent.Ignored()
          : PaymentEvent.RechargePaid({ organizationId, token, credits: credits.value, reference: intent.id })
      }
      return purpose === creditPack && paymentMethodId !== null
        ? PaymentEvent.PaymentMethodSaved({ organizationId, paymentMethodId })
        : PaymentEvent.Ignored()
    }
    case "payment_intent.payment_failed": {
      const intent = event.data.object
      const { purpose, token } = intent.metadata
      const organizationId = organizationOf(intent.metadata)
      return purpose === autoRecharge && organizationId && token
        ? PaymentEvent.RechargeFailed({
          organizationId,
          token,
          reason: intent.last_payment_error?.message ?? "The payment failed"
        })
        : PaymentEvent.Ignored()
    }
    case "customer.subscription.created":
    case "customer.subscription.updated":
    case "customer.subscription.deleted":
    case "customer.subscription.paused":
    case "customer.subscription.resumed":
      return subscriptionEvent(event.data.object, plan)
    case "invoice.payment_failed": {
      const invoice = event.data.object
      const customerId = idOf(invoice.customer)
      const subscriptionId = subscriptionOf(invoice)
      return customerId === null || subscriptionId === null
        ? PaymentEvent.Ignored()
        : PaymentEvent.SubscriptionPaymentFailed({ customerId, subscriptionId })
    }
    case "invoice.paid": {
      const invoice = event.data.object
      const customerId = idOf(invoice.customer)
      // A period of the plan: its first invoice or a renewal, paid. A proration, a manual or a $0 invoice brings no credits.
      return customerId === null || subscriptionOf(invoice) === null || !periodReasons.has(invoice.billing_reason ?? "") ||
          !(invoice.amount_paid > 0)
        ? PaymentEvent.Ignored()
        : PaymentEvent.PlanPeriodPaid({ customerId, reference: invoice.id })
    }
    default:
      return PaymentEvent.Ignored()
  }
}
