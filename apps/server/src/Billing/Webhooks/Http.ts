import { HttpApiBuilder } from "@effect/platform"
import { BadRequest, PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { BillingWebhooks } from "./Service.js"

/** The body is read raw (`handleRaw`): the signature covers its bytes as Stripe sent them, not a re-encoding. */
export const BillingWebhooksHttpLive = HttpApiBuilder.group(PostlineApi, "billingWebhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* BillingWebhooks
    return handlers.handleRaw("receiveStripeEvent", ({ request }) =>
      Effect.gen(function*() {
        const signature = request.headers["stripe-signature"]
        if (signature === undefined) return yield* new BadRequest({ message: "The Stripe-Signature header is missing" })
        const body = new Uint8Array(yield* Effect.orDie(request.arrayBuffer))
        yield* webhooks.receive(body, signature)
        return { received: true } as const
      }))
  })).pipe(Layer.provide(BillingWebhooks.Default))
