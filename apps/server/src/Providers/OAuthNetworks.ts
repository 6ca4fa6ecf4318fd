import { OAuthProvider, type SocialProvider } from "@postline/domain"
import { Effect, Schema } from "effect"
import { BlueskyOAuth } from "./BlueskyOAuth.js"
import { MastodonOAuth } from "./MastodonOAuth.js"
import type { OAuthNetwork } from "./OAuthNetwork.js"
import { XOAuth } from "./XOAuth.js"

const isOAuthProvider = Schema.is(OAuthProvider)

/** Every network whose accounts are connected by signing in, by name. Needs `Outbound` and `XSettings`. */
export class OAuthNetworks extends Effect.Service<OAuthNetworks>()("OAuthNetworks", {
  effect: Effect.gen(function*() {
    const networks: { readonly [P in OAuthProvider]?: OAuthNetwork<P> } = {
      bluesky: yield* BlueskyOAuth,
      mastodon: yield* MastodonOAuth,
      x: yield* XOAuth
    }
    /** The network, or undefined where this server has none for it yet. */
    const get = <P extends OAuthProvider>(provider: P): OAuthNetwork<P> | undefined =>
      networks[provider] as OAuthNetwork<P> | undefined
    /** The network of any provider: undefined for one connected otherwise (a webhook, a bot's token). */
    const of = (provider: SocialProvider): OAuthNetwork | undefined =>
      isOAuthProvider(provider) ? networks[provider] as OAuthNetwork | undefined : undefined
    /** The documents networks read about Postline on this server, by path. */
    const publishedDocuments = Object.values(networks).flatMap((network) =>
      network?.publishedDocument === undefined ? [] : [network.publishedDocument]
    )
    return { get, of, publishedDocuments } as const
  }),
  dependencies: [BlueskyOAuth.Default, MastodonOAuth.Default, XOAuth.Default]
}) {}
