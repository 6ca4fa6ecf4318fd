import { HttpApiBuilder } from "@effect/platform"
import { PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { Billing } from "./Service.js"

export const BillingHttpLive = HttpApiBuilder.group(PostlineApi, "billing", (handlers) =>
  Effect.gen(function*() {
    const billing = yield* Billing
    return handlers
      .handle("getBilling", ({ path }) => billing.get(path.organizationId))
      .handle("createCheckout", ({ path, payload }) => billing.checkout(path.organizationId, payload))
      .handle("createPortal", ({ path, payload }) => billing.portal(path.organizationId, payload.returnUrl))
      .handle("updateAutoRecharge", ({ path, payload }) => billing.updateAutoRecharge(path.organizationId, payload))
      .handle("updateSpendCap", ({ path, payload }) => billing.updateSpendCap(path.organizationId, payload.monthlyCredits))
  })).pipe(Layer.provide(Billing.Default))
