import { HttpApiBuilder } from "@effect/platform"
import { AccountConnect, ConnectStarted, PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { PublicOrigin } from "../Http/PublicOrigin.js"
import { AccountConnects } from "./Service.js"

export const AccountConnectsHttpLive = HttpApiBuilder.group(PostlineApi, "accountConnects", (handlers) =>
  Effect.gen(function*() {
    const connects = yield* AccountConnects
    const origin = yield* PublicOrigin
    return handlers
      .handle("startAccountConnect", ({ path, payload, request }) =>
        Effect.map(
          connects.start(path.teamId, payload, { url: origin.of(request), configured: origin.configured }),
          asEncoded(ConnectStarted, { status: 201 })
        ))
      .handle("getAccountConnect", ({ path }) =>
        Effect.map(connects.get(path.teamId, path.connectId), asEncoded(AccountConnect)))
  })).pipe(Layer.provide([AccountConnects.Default, PublicOrigin.Default]))
