import { HttpApiBuilder } from "@effect/platform"
import { PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { PaymentProvider } from "./PaymentProvider.js"
import { RechargerLive } from "./Recharger.js"
import { BillingRepo } from "./Repo.js"
import { Billing } from "./Service.js"
import { BillingSettings } from "./Settings.js"

export const BillingHttpLive = HttpApiBuilder.group(PostlineApi, "billing", (handlers) =>
  Effect.gen(function*() {
    const billing = yield* Billing
    return handlers
      .handle("getBilling", ({ path }) => billing.get(path.organizationId))
      .handle("createCheckout", ({ path, payload }) => billing.checkout(path.organizationId, payload))
      .handle("createPortal", ({ path, payload }) => billing.portal(path.organizationId, payload.returnUrl))
      .handle("updateAutoRecharge", ({ path, payload }) => billing.updateAutoRecharge(path.organizationId, payload))
      .handle("updateSpendCap", ({ path, payload }) => billing.updateSpendCap(path.organizationId, payload.monthlyCredits))
  })).pipe(
    Layer.provide(Billing.Default),
    // Recharges are started while the API serves.
    Layer.merge(RechargerLive.pipe(Layer.provide([BillingRepo.Default, PaymentProvider.Default, BillingSettings.Default])))
  )
