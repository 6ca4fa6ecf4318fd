import { HttpApiBuilder } from "@effect/platform"
import { PostlineApi, TeamPostingSlots } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { PostingSlots } from "./Service.js"

export const PostingSlotsHttpLive = HttpApiBuilder.group(PostlineApi, "postingSlots", (handlers) =>
  Effect.gen(function*() {
    const slots = yield* PostingSlots
    return handlers
      .handle("getPostingSlots", ({ path }) => Effect.map(slots.get(path.teamId), asEncoded(TeamPostingSlots)))
      .handle("setPostingSlots", ({ path, payload }) =>
        Effect.map(slots.set(path.teamId, payload), asEncoded(TeamPostingSlots)))
  })).pipe(Layer.provide(PostingSlots.Default))
