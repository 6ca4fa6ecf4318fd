import { HttpApiBuilder } from "@effect/platform"
import { EventWebhook, PostlineApi, SavedEventWebhook } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { EventWebhooks } from "./Service.js"

export const EventWebhooksHttpLive = HttpApiBuilder.group(PostlineApi, "eventWebhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* EventWebhooks
    return handlers
      .handle("getEventWebhook", ({ path }) => Effect.map(webhooks.get(path.organizationId), asEncoded(EventWebhook)))
      .handle("setEventWebhook", ({ path, payload }) =>
        Effect.map(webhooks.set(path.organizationId, payload), asEncoded(SavedEventWebhook)))
      .handle("deleteEventWebhook", ({ path }) => Effect.map(webhooks.remove(path.organizationId), asEncoded(EventWebhook)))
  })).pipe(Layer.provide(EventWebhooks.Default))
