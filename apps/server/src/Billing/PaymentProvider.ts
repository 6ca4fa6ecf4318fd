import { Effect, Option } from "effect"
import { lazyModule } from "../LazyModule.js"
import type { PaymentGateway } from "./PaymentGateway.js"
import { BillingSettings } from "./Settings.js"

// The Stripe SDK is big: it is loaded only when STRIPE_SECRET_KEY is set, so a server that sells nothing never parses it.
export const StripeModule = lazyModule("./Stripe.js", () => import("./Stripe.js"), { makeStripeGateway: "function" })

/** The payment provider: Stripe when STRIPE_SECRET_KEY is set, none otherwise. */
export class PaymentProvider extends Effect.Service<PaymentProvider>()("Billing/PaymentProvider", {
  effect: Effect.gen(function*() {
    const settings = yield* BillingSettings
    if (Option.isNone(settings.stripe)) return { gateway: Option.none<PaymentGateway>() }
    const { makeStripeGateway } = yield* StripeModule.load
    return { gateway: Option.some(makeStripeGateway(settings.stripe.value, settings.plan)) }
  }),
  dependencies: [BillingSettings.Default]
}) {}
