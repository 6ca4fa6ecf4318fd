import {
  BadRequest,
  type Billing as BillingState,
  BillingDisabled,
  type CheckoutRequest,
  Conflict,
  NotFound,
  type OrganizationId,
  type SubscriptionStatus,
  type UpdateAutoRecharge
} from "@postline/domain"
import { Data, Effect, Exit, Option, Schedule } from "effect"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { CheckoutExpiry, type PaymentGateway, providerCallMs } from "./PaymentGateway.js"
import { PaymentProvider } from "./PaymentProvider.js"
import { BillingPolicy } from "./Policy.js"
import { type BillingRow, BillingRepo } from "./Repo.js"
import { BillingSettings } from "./Settings.js"

/** Another request holds the organization's subscription checkout claim. */
class CheckoutBusy extends Data.TaggedError("CheckoutBusy") {}

// A claim outlives a checkout's calls to the provider while it holds it (expiring the session before, reading it,
// making the new one), with a margin; a request waits for its turn for a few seconds, then is refused.
const checkoutClaimMs = 3 * providerCallMs + 15_000
const checkoutTurns = Schedule.spaced("25 millis").pipe(Schedule.upTo("10 seconds"))

/**
 * The organization's subscription has not ended, paying or not (unpaid, paused): a second one would be made beside it,
 * and its events not used (Repo.setSubscription). Only a subscription has another status than these two.
 */
const hasSubscription = (status: typeof SubscriptionStatus.Type) => status !== "canceled" && status !== "inactive"

const subscribedAlready = (status: string) =>
  new Conflict({
    message: `The organization is subscribed already (${status}): change the subscription in the billing portal`,
    reason: "already_subscribed"
  })

const billingDisabled = new BillingDisabled({
  message: "Billing is off on this server (no STRIPE_SECRET_KEY): an operator grants credits with the admin command"
})

const lostClaim = new Conflict({
  message: "Another subscription checkout of the organization was made while this one waited for Stripe: try again in a moment",
  reason: "checkout_in_progress"
})

/** An organization's billing, for the current caller: reading it, buying credits or the plan, auto-recharge and the cap. */
export class Billing extends Effect.Service<Billing>()("Billing", {
  effect: Effect.gen(function*() {
    const repo = yield* BillingRepo
    const policy = yield* BillingPolicy
    const settings = yield* BillingSettings
    const { gateway } = yield* PaymentProvider
    const creditPacks = settings.packs.map(({ credits }) => ({ credits }))
    const plan = Option.getOrNull(Option.map(settings.plan, ({ includedCredits, name }) => ({ name, includedCredits })))
    const packCredits = settings.packs.map((pack) => pack.credits).join(", ")

    const stateOf = (row: BillingRow, whole: boolean): BillingState => ({
      enabled: Option.isSome(gateway),
      creditPacks,
      plan,
      credits: { balance: row.balance, reserved: row.reserved, available: row.available },
      account: whole
        ? {
          paymentCustomerId: row.paymentCustomerId,
          paymentSubscriptionId: row.paymentSubscriptionId,
          paymentPaymentMethodId: row.paymentPaymentMethodId,
          paymentMeteredSubscriptionItemId: row.paymentMeteredSubscriptionItemId,
          isSubscribed: row.isSubscribed,
          subscriptionStatus: row.subscriptionStatus,
          subscriptionPlan: row.subscriptionPlan,
          subscriptionStartedAt: row.subscriptionStartedAt,
          subscriptionEndsAt: row.subscriptionEndsAt,
          subscriptionCurrentPeriodEnd: row.subscriptionCurrentPeriodEnd,
          autoRecharge: {
            enabled: row.autoRechargeEnabled,
            threshold: row.autoRechargeThreshold,
            amount: row.autoRechargeAmount,
            pending: row.autoRechargePending,
            lastError: row.autoRechargeLastError
          },
          spendCap: { monthlyCredits: row.spendCap, spentThisMonth: row.spentThisMonth }
        }
        : null
    })

    const found = (organizationId: OrganizationId) => (row: Option.Option<BillingRow>) =>
      Option.match(row, {
        onNone: () => new NotFound({ message: `Organization ${organizationId} not found` }),
        onSome: Effect.succeed
      })

    const get = (organizationId: OrganizationId) =>
      authorize(policy.canView(organizationId))((whole) =>
        Effect.map(Effect.flatMap(repo.find(organizationId), found(organizationId)), (row) => stateOf(row, whole)))

    const requireGateway = Option.match(gateway, { onNone: () => billingDisabled, onSome: Effect.succeed })

    const rowToManage = (organizationId: OrganizationId) =>
      Effect.flatMap(repo.findToManage(organizationId), found(organizationId))

    /**
     * The organization's customer at the provider, made on first use (outside any transaction: it is a call to the
     * provider), then kept with the caller's role held.
     */
    const customerOf = (organizationId: OrganizationId, row: BillingRow) =>
      Effect.gen(function*() {
        const provider = yield* requireGateway
        if (row.paymentCustomerId !== null) return { provider, customerId: row.paymentCustomerId }
        const made = yield* provider.createCustomer({ id: organizationId, name: row.name })
        const customerId = yield* authorize(policy.canManage(organizationId, { lock: true }))(() =>
          repo.keepCustomer(organizationId, made)
        ).pipe(transactionally)
        return { provider, customerId }
      })

    const checkout = (organizationId: OrganizationId, request: CheckoutRequest) =>
      authorize(policy.canManage(organizationId, { lock: false }))(() =>
        Effect.gen(function*() {
          yield* requireGateway
          const pack = request.purchase === "credits"
            ? settings.packs.find((pack) => pack.credits === request.credits)
            : undefined
          if (request.purchase === "credits" && pack === undefined) {
            return yield* new BadRequest({
              message: `No pack of ${request.credits} credits is on sale; the packs: ${packCredits}`,
              reason: "unknown_pack"
            })
          }
          if (request.purchase === "subscription" && Option.isNone(settings.plan)) {
            return yield* new Conflict({
              message: "This server offers no subscription plan (BILLING_PLAN_PRICE_ID is not set)",
              reason: "no_subscription_plan"
            })
          }
          const row = yield* rowToManage(organizationId)
          // Refused before any customer is made at the provider.
          if (pack === undefined && hasSubscription(row.subscriptionStatus)) {
            return yield* subscribedAlready(row.subscriptionStatus)
          }
          const { customerId, provider } = yield* customerOf(organizationId, row)
          if (pack !== undefined) {
            return { url: yield* provider.checkoutPack({ customerId, organizationId, pack, returnUrl: request.returnUrl }) }
          }
          return yield* subscriptionCheckout(organizationId, provider, customerId, request.returnUrl)
        }))

    /**
     * One payable subscription checkout per organization: the one open before is expired first, so that two checkouts
     * made before either is paid cannot both become subscriptions. Concurrent ones take turns through a claim on the
     * organization's row (a transaction held across the provider's calls would hold the embedded database's one
     * connection); a claim is given back when its checkout ends, and lapses after `checkoutClaimMs` should its
     * process die. One paid before it could be expired is being set up: the new checkout is refused. Once claimed,
     * the checkout runs to its end whatever the client does (a session made at the provider is kept); a claim found
     * lost at the end (it lapsed and another checkout took it) expires the session just made.
     */
    const subscriptionCheckout = (organizationId: OrganizationId, provider: PaymentGateway, customerId: string, returnUrl: string) =>
      Effect.gen(function*() {
        const claimed = yield* authorize(policy.canManage(organizationId, { lock: true }))(() =>
          repo.claimSubscriptionCheckout(organizationId, checkoutClaimMs)
        ).pipe(
          transactionally,
          Effect.flatMap(Option.match({ onNone: () => new CheckoutBusy(), onSome: Effect.succeed })),
          Effect.retry({ while: (error) => error._tag === "CheckoutBusy", schedule: checkoutTurns }),
          Effect.catchTag("CheckoutBusy", () =>
            new Conflict({
              message: "Another subscription checkout of the organization is being made: try again in a moment",
              reason: "checkout_in_progress"
            }))
        )
        const made = yield* Effect.gen(function*() {
          // Subscribed while this waited for its turn.
          if (hasSubscription(claimed.subscriptionStatus)) {
            return yield* subscribedAlready(claimed.subscriptionStatus)
          }
          const earlier = claimed.sessionId === null ? CheckoutExpiry.Expired() : yield* provider.expireCheckout(claimed.sessionId)
          // A completed session of the subscription the organization has had (ended since) is no new one.
          if (earlier._tag === "Completed" && (earlier.subscriptionId === null || earlier.subscriptionId !== claimed.subscriptionId)) {
            return yield* new Conflict({
              message: "The organization's previous subscription checkout was paid and its subscription is being set up: " +
                "GET …/billing shows it once it is",
              reason: "subscription_pending"
            })
          }
          const plan = Option.getOrThrow(settings.plan)
          return yield* provider.checkoutPlan({ customerId, organizationId, plan, returnUrl })
        }).pipe(
          Effect.exit,
          Effect.flatMap((exit) =>
            Effect.flatMap(
              repo.releaseSubscriptionCheckout(
                organizationId,
                claimed.claim,
                Exit.isSuccess(exit) ? Option.some(exit.value.sessionId) : Option.none()
              ),
              (held) =>
                held || Exit.isFailure(exit) ? exit : Effect.zipRight(provider.expireCheckout(exit.value.sessionId), lostClaim)
            )
          ),
          Effect.uninterruptible
        )
        return { url: made.url }
      })

    const portal = (organizationId: OrganizationId, returnUrl: string) =>
      authorize(policy.canManage(organizationId, { lock: false }))(() =>
        Effect.gen(function*() {
          yield* requireGateway
          const { customerId, provider } = yield* customerOf(organizationId, yield* rowToManage(organizationId))
          return { url: yield* provider.portal({ customerId, returnUrl }) }
        }))

    /** Turning it on takes a threshold, a pack's credits as amount, and a payment method kept by a checkout. */
    const updateAutoRecharge = (organizationId: OrganizationId, update: UpdateAutoRecharge) =>
      authorize(policy.canManage(organizationId, { lock: true }))(() =>
        Effect.gen(function*() {
          yield* requireGateway
          const row = yield* Effect.flatMap(repo.findForUpdate(organizationId), found(organizationId))
          const threshold = update.threshold ?? row.autoRechargeThreshold
          const amount = update.amount ?? row.autoRechargeAmount
          if (update.enabled) {
            if (threshold === null || amount === null) {
              return yield* new BadRequest({ message: "Auto-recharge needs a threshold and an amount", reason: "auto_recharge_incomplete" })
            }
            if (row.paymentPaymentMethodId === null) {
              return yield* new Conflict({
                message: "The organization has no saved payment method: buy a credit pack first, its card is kept for recharges",
                reason: "no_payment_method"
              })
            }
          }
          // A pack no longer on sale does not keep auto-recharge from being turned off.
          const checked = update.enabled || update.amount !== undefined
          if (checked && amount !== null && !settings.packs.some((pack) => pack.credits === amount)) {
            return yield* new BadRequest({ message: `amount must be the credits of a pack on sale: ${packCredits}`, reason: "unknown_pack" })
          }
          return stateOf(yield* repo.setAutoRecharge(organizationId, { enabled: update.enabled, threshold, amount }), true)
        })).pipe(transactionally)

    const updateSpendCap = (organizationId: OrganizationId, monthlyCredits: number | null) =>
      authorize(policy.canManage(organizationId, { lock: true }))(() =>
        Effect.map(repo.setSpendCap(organizationId, monthlyCredits), (row) => stateOf(row, true))).pipe(transactionally)

    return { get, checkout, portal, updateAutoRecharge, updateSpendCap } as const
  }),
  dependencies: [BillingRepo.Default, BillingPolicy.Default, BillingSettings.Default, PaymentProvider.Default]
}) {}
