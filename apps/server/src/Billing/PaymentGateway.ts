import type { OrganizationId, SubscriptionStatus } from "@postline/domain"
import { Data, type Effect } from "effect"
import type { PackSetting, PlanSetting } from "./Settings.js"

/** What a payment provider's event means here; each comes from a verified event. */
export type PaymentEvent = Data.TaggedEnum<{
  /**
   * A credit pack was paid for through a checkout (`reference`, the session: several events tell of one); the
   * organization named in the checkout's metadata, the customer who paid.
   */
  CreditsPaid: {
    readonly organizationId: OrganizationId
    readonly customerId: string | null
    readonly credits: number
    readonly reference: string
  }
  /** A payment method the organization's later off-session payments may use. */
  PaymentMethodSaved: { readonly organizationId: OrganizationId; readonly paymentMethodId: string }
  SubscriptionChanged: {
    readonly customerId: string
    readonly subscriptionId: string
    readonly status: typeof SubscriptionStatus.Type
    readonly startedAt: Date | null
    readonly endsAt: Date | null
    readonly currentPeriodEnd: Date | null
    readonly meteredItemId: string | null
    readonly paymentMethodId: string | null
  }
  /** A subscription's invoice could not be paid. */
  SubscriptionPaymentFailed: { readonly customerId: string; readonly subscriptionId: string }
  /** A subscription's invoice was paid: a period of the plan, with its credits. */
  PlanPeriodPaid: { readonly customerId: string; readonly reference: string }
  RechargePaid: {
    readonly organizationId: OrganizationId
    readonly token: string
    readonly credits: number
    readonly reference: string
  }
  RechargeFailed: { readonly organizationId: OrganizationId; readonly token: string; readonly reason: string }
  Ignored: {}
}>
export const PaymentEvent = Data.taggedEnum<PaymentEvent>()

export interface ReceivedEvent {
  readonly id: string
  readonly type: string
  /** When the provider made it: events may arrive out of order. */
  readonly createdAt: Date
  readonly event: PaymentEvent
}

export class InvalidSignature extends Data.TaggedError("InvalidSignature")<{ readonly message: string }> {}

/** A correctly signed event whose content the server cannot read (a shape it does not expect). */
export class UnreadableEvent extends Data.TaggedError("UnreadableEvent")<{ readonly message: string }> {}

/** The provider refused the payment for good (a declined card, a removed payment method): it is not tried again. */
export class PaymentDeclined extends Data.TaggedError("PaymentDeclined")<{ readonly message: string }> {}

/** The provider refused a usage report as it is (too old, an unknown meter): reporting it again would not help. */
export class UsageRefused extends Data.TaggedError("UsageRefused")<{ readonly message: string }> {}

/** What the provider says of a recharge's payment when asked (its webhook did not come). */
export type RechargePayment = Data.TaggedEnum<{
  Paid: { readonly credits: number; readonly reference: string }
  /** Failed for good: no further attempt of this payment will be made. */
  Failed: { readonly reason: string }
  /**
   * Not decided yet (processing, waiting for the customer's action): asked again later. `status` is the provider's;
   * `cancelable` says whether the provider can still cancel it (it could not complete after that).
   */
  Pending: { readonly status: string; readonly cancelable: boolean }
}>
export const RechargePayment = Data.taggedEnum<RechargePayment>()

/** What became of a checkout session the server asked the provider to expire. */
export type CheckoutExpiry = Data.TaggedEnum<{
  /** It can no longer be paid: expired now or before. */
  Expired: {}
  /** It was paid before it could be expired: its subscription is being set up. */
  Completed: { readonly subscriptionId: string | null }
}>
export const CheckoutExpiry = Data.taggedEnum<CheckoutExpiry>()

/**
 * One call to the provider ends within `providerCallMs`: Stripe.ts gives each attempt `timeoutMs` and makes
 * `retries` more after a failure to reach it (sleeping a second or two between them).
 */
export const providerCall = { timeoutMs: 10_000, retries: 2 } as const
export const providerCallMs = providerCall.timeoutMs * (providerCall.retries + 1) + 5_000

/** The few things billing asks of a payment provider. Failures to reach it are defects (500), logged. */
export interface PaymentGateway {
  readonly createCustomer: (organization: { readonly id: string; readonly name: string }) => Effect.Effect<string>
  readonly checkoutPack: (input: {
    readonly customerId: string
    readonly organizationId: OrganizationId
    readonly pack: PackSetting
    readonly returnUrl: string
  }) => Effect.Effect<string>
  readonly checkoutPlan: (input: {
    readonly customerId: string
    readonly organizationId: OrganizationId
    readonly plan: PlanSetting
    readonly returnUrl: string
  }) => Effect.Effect<{ readonly sessionId: string; readonly url: string }>
  /** Makes a subscription checkout's session unpayable, unless it completed; one the provider does not know is expired. */
  readonly expireCheckout: (sessionId: string) => Effect.Effect<CheckoutExpiry>
  readonly portal: (input: { readonly customerId: string; readonly returnUrl: string }) => Effect.Effect<string>
  /** Pays for the pack with the saved payment method, the customer absent; one payment per token, however often asked. */
  readonly recharge: (input: {
    readonly customerId: string
    readonly paymentMethodId: string
    readonly organizationId: OrganizationId
    readonly pack: PackSetting
    readonly token: string
  }) => Effect.Effect<{ readonly paymentIntentId: string }, PaymentDeclined>
  /** Where a started recharge's payment is now. */
  readonly rechargePayment: (paymentIntentId: string) => Effect.Effect<RechargePayment>
  /** Cancels a recharge's payment that is `cancelable`: it can no longer complete. */
  readonly cancelRecharge: (paymentIntentId: string) => Effect.Effect<void>
  /** The event the body holds, once its signature is checked against the raw bytes. */
  readonly receive: (body: Uint8Array, signature: string) => Effect.Effect<ReceivedEvent, InvalidSignature | UnreadableEvent>
  /**
   * Reports credits the customer used beyond the plan's as one event of the plan's meter, made `at`; `identifier`
   * makes it one event however often it is reported. Failing to reach the provider is a defect, not logged here.
   */
  readonly reportUsage: (usage: {
    readonly identifier: string
    readonly eventName: string
    readonly customerId: string
    readonly credits: number
    readonly at: Date
  }) => Effect.Effect<void, UsageRefused>
}
