import type { ConfigError } from "effect"
import { Layer } from "effect"
import { Outbound } from "../../src/Outbound/Outbound.js"
import { OAuthNetworks } from "../../src/Providers/OAuthNetworks.js"
import { SocialProviders } from "../../src/Providers/Registry.js"
import { XSettings } from "../../src/Providers/XSettings.js"
import { BlueskyOAuthSettings } from "../../src/Providers/BlueskyOAuthClient.js"

const local = Outbound.Default({ allowPrivate: true })

/**
 * The providers as the server builds them, allowed to reach this machine: the fakes and the local
 * AT Protocol network listen on 127.0.0.1. X is where `x` says (by default as configured: not set up).
 */
export const localProvidersWith = (
  x: Layer.Layer<XSettings, ConfigError.ConfigError> = XSettings.Default,
  bluesky: Layer.Layer<BlueskyOAuthSettings, ConfigError.ConfigError> = BlueskyOAuthSettings.Default
) => SocialProviders.Default.pipe(Layer.provideMerge(local), Layer.provide(x), Layer.provide(bluesky))

export const LocalProviders = localProvidersWith()

/** The networks accounts are connected to by signing in, allowed to reach this machine; X where `x` says. */
export const localOAuthNetworksWith = (
  x: Layer.Layer<XSettings, ConfigError.ConfigError> = XSettings.Default,
  bluesky: Layer.Layer<BlueskyOAuthSettings, ConfigError.ConfigError> = BlueskyOAuthSettings.Default
) => OAuthNetworks.Default.pipe(Layer.provide(local), Layer.provide(x), Layer.provide(bluesky))

export const LocalOAuthNetworks = localOAuthNetworksWith()

/** The sign-in networks with the production guard: private addresses refused. */
export const GuardedOAuthNetworks = OAuthNetworks.Default.pipe(
  Layer.provide(Outbound.Default({ allowPrivate: false })),
  Layer.provide(XSettings.Default),
  Layer.provide(BlueskyOAuthSettings.Default)
)

/** The providers with the production guard: private addresses refused. */
export const GuardedProviders = SocialProviders.Default.pipe(
  Layer.provideMerge(Outbound.Default({ allowPrivate: false })),
  Layer.provide(XSettings.Default),
  Layer.provide(BlueskyOAuthSettings.Default)
)
