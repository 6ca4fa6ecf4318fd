import { Effect } from "effect"
import { Bluesky } from "./Bluesky.js"
import type { ProviderCredentials, ProviderName } from "./Credentials.js"
import { Discord } from "./Discord.js"
import { Mastodon } from "./Mastodon.js"
import type { PublishRequest, SocialAccountOf, SocialProvider } from "./SocialProvider.js"
import { Telegram } from "./Telegram.js"
import { Webhook } from "./Webhook.js"
import { X } from "./X.js"

/** Every provider by name; `verify` and `publish` pick the provider the credentials belong to. Needs `Outbound` and `XSettings`. */
export class SocialProviders extends Effect.Service<SocialProviders>()("SocialProviders", {
  effect: Effect.gen(function*() {
    const providers: { readonly [P in ProviderName]: SocialProvider<P> } = {
      bluesky: yield* Bluesky,
      mastodon: yield* Mastodon,
      x: yield* X,
      telegram: yield* Telegram,
      discord: yield* Discord,
      webhook: yield* Webhook
    }
    const get = <P extends ProviderName>(name: P): SocialProvider<P> => providers[name]
    return {
      get,
      verify: (credentials: ProviderCredentials) => get(credentials.provider).verify(credentials),
      publish: (account: SocialAccountOf, post: PublishRequest) => get(account.credentials.provider).publish(account, post)
    } as const
  }),
  dependencies: [Bluesky.Default, Mastodon.Default, X.Default, Telegram.Default, Discord.Default, Webhook.Default]
}) {}
