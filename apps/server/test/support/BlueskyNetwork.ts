import { type BlueskyNetwork as Network, startBlueskyNetwork } from "@postline/test-bluesky"
import { Context, Effect, Layer } from "effect"

/** A real AT Protocol network (a PLC and a PDS) in this process, from packages/test-bluesky. */
export class BlueskyNetwork extends Context.Tag("test/BlueskyNetwork")<BlueskyNetwork, Network>() {
  static readonly layer = (options: { readonly rateLimits?: boolean } = {}) =>
    Layer.scoped(
      BlueskyNetwork,
      Effect.acquireRelease(
        Effect.promise(() => startBlueskyNetwork(options)),
        (network) => Effect.promise(() => network.close())
      )
    )
}
