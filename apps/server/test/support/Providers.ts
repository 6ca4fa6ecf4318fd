import { Layer } from "effect"
import { Outbound } from "../../src/Outbound/Outbound.js"
import { SocialProviders } from "../../src/Providers/Registry.js"

/**
 * The providers as the server builds them, allowed to reach this machine: the fakes and the local
 * AT Protocol network listen on 127.0.0.1.
 */
export const LocalProviders = SocialProviders.Default.pipe(Layer.provideMerge(Outbound.Default({ allowPrivate: true })))

/** The providers with the production guard: private addresses refused. */
export const GuardedProviders = SocialProviders.Default.pipe(Layer.provideMerge(Outbound.Default({ allowPrivate: false })))
