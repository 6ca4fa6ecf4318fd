import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema, Struct } from "effect"
import { CreditBalance } from "./Credits.js"
import { BillingDisabled, NotFound } from "./Errors.js"
import { integer, invalidUnless, strict, WebsiteUrl } from "./Fields.js"
import { Organization, OrganizationPath } from "./Organizations.js"
import { notRateLimited } from "./RateLimits.js"

/** The most credits one setting may name: far above any pack, far below what bigint columns hold. */
export const maxCredits = 1_000_000_000

/** A positive whole number of credits, bounded. */
export const CreditAmount = integer(`A whole number of credits, 1 to ${maxCredits}`).pipe(
  Schema.filter((n) => n >= 1 && n <= maxCredits, { jsonSchema: { minimum: 1, maximum: maxCredits } })
).annotations({
  identifier: "CreditAmount",
  ...invalidUnless(`must be a whole number of credits from 1 to ${maxCredits}`)
})

export const CreditPack = Schema.Struct({
  credits: CreditAmount
}).annotations({ identifier: "CreditPack", description: "A pack of credits on sale; its price is the payment provider's" })

export const PlanOffer = Schema.Struct({
  name: Schema.String,
  includedCredits: integer("The credits each paid period of the plan brings")
}).annotations({ identifier: "PlanOffer", description: "The subscription plan on sale" })

export const AutoRecharge = Schema.Struct({
  enabled: Schema.Boolean,
  threshold: Schema.NullOr(CreditAmount).annotations({ description: "A recharge starts when available credits fall below it" }),
  amount: Schema.NullOr(CreditAmount).annotations({ description: "The credits of the pack each recharge buys" }),
  pending: Schema.Boolean.annotations({ description: "A recharge has started and its credits have not arrived yet" }),
  lastError: Schema.NullOr(Schema.String).annotations({
    description: "Why the last recharge failed (auto-recharge was then turned off); null once it is turned on again"
  })
}).annotations({ identifier: "AutoRecharge" })

export const SpendCap = Schema.Struct({
  monthlyCredits: Schema.NullOr(CreditAmount).annotations({
    description: "The most credits publishing and analytics may spend in a calendar month (UTC); null: no cap"
  }),
  spentThisMonth: integer("Credits spent or held this calendar month (UTC)")
}).annotations({ identifier: "SpendCap" })

/** What admins, owners and API keys see beyond the credits: the organization's payment and subscription fields, and more. */
export const BillingAccount = Schema.Struct({
  ...Struct.pick(
    Organization.fields,
    "paymentCustomerId",
    "paymentSubscriptionId",
    "paymentPaymentMethodId",
    "paymentMeteredSubscriptionItemId",
    "isSubscribed",
    "subscriptionStatus",
    "subscriptionPlan",
    "subscriptionStartedAt",
    "subscriptionEndsAt",
    "subscriptionCurrentPeriodEnd"
  ),
  autoRecharge: AutoRecharge,
  spendCap: SpendCap
}).annotations({ identifier: "BillingAccount" })
export type BillingAccount = typeof BillingAccount.Type

export const Billing = Schema.Struct({
  enabled: Schema.Boolean.annotations({
    description: "Whether this server sells credits; without a payment provider an operator grants them"
  }),
  creditPacks: Schema.Array(CreditPack),
  plan: Schema.NullOr(PlanOffer).annotations({ description: "The subscription plan on sale; null when none is" }),
  credits: CreditBalance,
  account: Schema.NullOr(BillingAccount).annotations({
    description: "The organization's billing; null for members, who see only the credits"
  })
}).annotations({ identifier: "Billing", description: "An organization's billing state" })
export type Billing = typeof Billing.Type

export const CheckoutRequest = Schema.Union(
  Schema.Struct({
    purchase: Schema.Literal("credits"),
    credits: CreditAmount.annotations({ description: "The credits of one of the packs on sale" }),
    returnUrl: WebsiteUrl
  }).annotations({ ...strict, identifier: "CreditPackCheckout" }),
  Schema.Struct({
    purchase: Schema.Literal("subscription"),
    returnUrl: WebsiteUrl
  }).annotations({ ...strict, identifier: "SubscriptionCheckout" })
).annotations({
  identifier: "CheckoutRequest",
  ...invalidUnless("must be { purchase: \"credits\", credits, returnUrl } or { purchase: \"subscription\", returnUrl }")
})
export type CheckoutRequest = typeof CheckoutRequest.Type

export const PortalRequest = Schema.Struct({ returnUrl: WebsiteUrl }).annotations({
  ...strict,
  identifier: "PortalRequest"
})

export const RedirectUrl = Schema.Struct({
  url: Schema.String.annotations({ description: "Where to send the person: a page of the payment provider" })
}).annotations({ identifier: "RedirectUrl" })

export const UpdateAutoRecharge = Schema.Struct({
  enabled: Schema.Boolean,
  threshold: Schema.optionalWith(CreditAmount, { exact: true }),
  amount: Schema.optionalWith(CreditAmount, { exact: true })
}).annotations({ ...strict, identifier: "UpdateAutoRecharge" })
export type UpdateAutoRecharge = typeof UpdateAutoRecharge.Type

export const UpdateSpendCap = Schema.Struct({
  monthlyCredits: Schema.NullOr(CreditAmount)
}).annotations({ ...strict, identifier: "UpdateSpendCap" })
export type UpdateSpendCap = typeof UpdateSpendCap.Type

export class BillingGroup extends HttpApiGroup.make("billing")
  .add(
    HttpApiEndpoint.get("getBilling", "/v1/organizations/:organizationId/billing")
      .setPath(OrganizationPath)
      .addSuccess(Billing)
      .annotate(OpenApi.Summary, "Get billing")
      .annotate(
        OpenApi.Description,
        "The organization's billing state: admins, owners and its API keys see all of it, other members the credits only."
      )
  )
  .add(
    HttpApiEndpoint.post("createCheckout", "/v1/organizations/:organizationId/billing/checkout")
      .setPath(OrganizationPath)
      .setPayload(CheckoutRequest)
      .addSuccess(RedirectUrl, { status: 201 })
      .addError(BillingDisabled)
      .annotate(OpenApi.Summary, "Start a checkout")
      .annotate(
        OpenApi.Description,
        "A payment page for a credit pack (credits arrive when the payment does; 400 `unknown_pack` for a number of " +
          "credits no pack has) or for the subscription plan (409 `no_subscription_plan` when the server offers none). " +
          "An organization has one payable subscription checkout: a new one expires the one before; 409 Conflict when " +
          "the organization has a subscription that has not ended (`already_subscribed`; unpaid or paused included: the " +
          "billing portal changes it), when the one before was paid and its subscription is being set up " +
          "(`subscription_pending`), or when another checkout of the organization is being made (`checkout_in_progress`). " +
          "Admins, owners and API keys; 409 BillingDisabled on a server without a payment provider."
      )
  )
  .add(
    HttpApiEndpoint.post("createPortal", "/v1/organizations/:organizationId/billing/portal")
      .setPath(OrganizationPath)
      .setPayload(PortalRequest)
      .addSuccess(RedirectUrl, { status: 201 })
      .addError(BillingDisabled)
      .annotate(OpenApi.Summary, "Open the billing portal")
      .annotate(OpenApi.Description, "The payment provider's page for payment methods, invoices and the subscription.")
  )
  .add(
    HttpApiEndpoint.patch("updateAutoRecharge", "/v1/organizations/:organizationId/billing/auto-recharge")
      .setPath(OrganizationPath)
      .setPayload(UpdateAutoRecharge)
      .addSuccess(Billing)
      .addError(BillingDisabled)
      .annotate(OpenApi.Summary, "Set auto-recharge")
      .annotate(
        OpenApi.Description,
        "When available credits fall below `threshold` after a spend, a pack of `amount` credits is bought with the " +
          "saved payment method. Turning it on takes both (400 `auto_recharge_incomplete`), a pack's credits as amount " +
          "(400 `unknown_pack`), and a saved payment method (409 `no_payment_method`)."
      )
  )
  .add(
    HttpApiEndpoint.patch("updateSpendCap", "/v1/organizations/:organizationId/billing/spend-cap")
      .setPath(OrganizationPath)
      .setPayload(UpdateSpendCap)
      .addSuccess(Billing)
      .annotate(OpenApi.Summary, "Set the spend cap")
      .annotate(
        OpenApi.Description,
        "The most credits publishing and analytics may spend per calendar month (UTC); beyond it they answer 402 " +
          "`spend_cap_reached`. " +
          "null removes the cap. Works with or without a payment provider (onboarding's spend_cap step)."
      )
  )
  .annotate(OpenApi.Title, "billing")
  .annotate(OpenApi.Description, "Buying credits, the subscription, auto-recharge and the spend cap")
{}

/**
 * A Stripe event: the server reads `id` and `type` (then what the type holds) and keeps every other field, so
 * the document says the object is open rather than naming a schema for "anything". The signature covers the
 * whole body as sent.
 */
export const PaymentEvent = Schema.Struct(
  { id: Schema.String, type: Schema.String },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
).annotations({
  identifier: "PaymentEvent",
  jsonSchema: {
    type: "object",
    required: ["id", "type"],
    properties: { id: { type: "string" }, type: { type: "string" } },
    additionalProperties: true,
    description: "A Stripe event, as Stripe sends it"
  }
})

export const PaymentEventReceived = Schema.Struct({ received: Schema.Literal(true) }).annotations({
  identifier: "PaymentEventReceived",
  description: "The event was taken: acted on now or before (a repeat), or ignored as one the server does not use"
})

export class BillingWebhooksGroup extends HttpApiGroup.make("billingWebhooks")
  .add(
    HttpApiEndpoint.post("receiveStripeEvent", "/v1/billing/webhooks/stripe")
      .setPayload(PaymentEvent)
      .addSuccess(PaymentEventReceived)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Receive a Stripe event")
      .annotate(
        OpenApi.Description,
        "Stripe's webhook: the body must carry a valid `Stripe-Signature` (400 `invalid_signature` otherwise; 400 " +
          "`unreadable_event` for a signed event whose content cannot be read). Each event acts once, " +
          "however often it is delivered; events the server does not use are acknowledged. 404 when billing is off. " +
          "Not rate limited: Stripe's retries of a burst must all be taken."
      )
      .annotate(OpenApi.Transform, notRateLimited)
  )
  .annotate(OpenApi.Title, "billing webhooks")
  .annotate(OpenApi.Description, "What the payment provider tells the server")
{}
