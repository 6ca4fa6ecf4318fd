import { HttpApiBuilder } from "@effect/platform"
import { PostLinkList, PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { Links } from "./Service.js"

export const LinksHttpLive = HttpApiBuilder.group(PostlineApi, "links", (handlers) =>
  Effect.gen(function*() {
    const links = yield* Links
    return handlers.handle("listPostLinks", ({ path, urlParams }) =>
      Effect.map(links.list(path.teamId, path.postId, urlParams), asEncoded(PostLinkList)))
  })).pipe(Layer.provide(Links.Default))
