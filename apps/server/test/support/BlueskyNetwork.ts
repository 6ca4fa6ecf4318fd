import {
  type BlueskyNetwork as Network,
  type BlueskyNetworkWithAppView as NetworkWithAppView,
  startBlueskyNetwork,
  startBlueskyNetworkWithAppView
} from "@postline/test-bluesky"
import { Context, Effect, Layer } from "effect"
import { scopedPostgresDatabase } from "./TestDatabase.js"

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

/**
 * A real AT Protocol network with an AppView (a PLC, a PDS, the AppView, Ozone and bsync) in this process, its
 * AppView's data in a PostgreSQL database of its own, dropped when the scope closes. Start it once per file: it
 * takes seconds.
 */
export class BlueskyAppViewNetwork extends Context.Tag("test/BlueskyAppViewNetwork")<BlueskyAppViewNetwork, NetworkWithAppView>() {
  static readonly layer = Layer.scoped(
    BlueskyAppViewNetwork,
    Effect.flatMap(scopedPostgresDatabase, ({ url }) =>
      Effect.acquireRelease(
        Effect.promise(() =>
          startBlueskyNetworkWithAppView({ dbPostgresUrl: url, redisHost: process.env.TEST_REDIS_HOST ?? "127.0.0.1:6379" })
        ),
        (network) => Effect.promise(() => network.close())
      ))
  )
}
