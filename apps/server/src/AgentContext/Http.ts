import { HttpApiBuilder } from "@effect/platform"
import { AgentContext, AgentDefaultsChoice, PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { AgentContexts } from "./Service.js"

export const AgentContextHttpLive = HttpApiBuilder.group(PostlineApi, "agent", (handlers) =>
  Effect.gen(function*() {
    const contexts = yield* AgentContexts
    return handlers
      .handle("getContext", () => Effect.map(contexts.read, asEncoded(AgentContext)))
      .handle("setDefaults", ({ payload }) => Effect.map(contexts.saveDefaults(payload), asEncoded(AgentDefaultsChoice)))
  })).pipe(Layer.provide(AgentContexts.Default))
