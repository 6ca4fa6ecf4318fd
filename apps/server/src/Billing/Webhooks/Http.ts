import { HttpApiBuilder } from "@effect/platform"
import { PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { BillingWebhooks } from "./Service.js"

/** The body is read raw (`handleRaw`): the signature covers its bytes as Stripe sent them, not a re-encoding. */
export const BillingWebhooksHttpLive = HttpApiBuilder.group(PostlineApi, "billingWebhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* BillingWebhooks
    return handlers.handleRaw("receiveStripeEvent", ({ request }) =>
      Effect.gen(function*() {
        const body = new Uint8Array(yield* Effect.orDie(request.arrayBuffer))
        yield* webhooks.receive(body, request.headers["stripe-signature"])
        return { received: true } as const
      }))
  })).pipe(Layer.provide(BillingWebhooks.Default))
