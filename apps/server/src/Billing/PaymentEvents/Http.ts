import { HttpApiBuilder } from "@effect/platform"
import { PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { PaymentEventsReceiver } from "./Service.js"

/** The body is read raw (`handleRaw`): the signature covers its bytes as Stripe sent them, not a re-encoding. */
export const PaymentEventsHttpLive = HttpApiBuilder.group(PostlineApi, "billingWebhooks", (handlers) =>
  Effect.gen(function*() {
    const receiver = yield* PaymentEventsReceiver
    return handlers.handleRaw("receiveStripeEvent", ({ request }) =>
      Effect.gen(function*() {
        const body = new Uint8Array(yield* Effect.orDie(request.arrayBuffer))
        yield* receiver.receive(body, request.headers["stripe-signature"])
        return { received: true } as const
      }))
  })).pipe(Layer.provide(PaymentEventsReceiver.Default))
