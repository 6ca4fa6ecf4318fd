import { Config, Effect, Option, Redacted } from "effect"

/** An empty value, as an env file may leave one, is no value. */
const optional = <A>(config: Config.Config<A>, isEmpty: (value: A) => boolean) =>
  Config.option(config).pipe(Config.map((value) => Option.getOrNull(Option.filter(value, (set) => !isEmpty(set)))))

/**
 * The X app this server signs in with (developer.x.com, OAuth 2.0, a confidential client: the token calls
 * authenticate with HTTP Basic), and where X is: its API and its sign-in page. Read once, at start.
 */
export class XSettings extends Effect.Service<XSettings>()("XSettings", {
  effect: Effect.gen(function*() {
    const clientId = yield* optional(Config.string("X_CLIENT_ID"), (id) => id.trim() === "")
    const clientSecret = yield* optional(Config.redacted("X_CLIENT_SECRET"), (secret) => Redacted.value(secret).trim() === "")
    const apiUrl = yield* Config.url("X_API_URL").pipe(Config.withDefault(new URL("https://api.x.com")))
    const authorizeUrl = yield* Config.url("X_AUTHORIZE_URL").pipe(
      Config.withDefault(new URL("https://x.com/i/oauth2/authorize"))
    )
    return {
      clientId,
      clientSecret,
      /** Without a trailing slash: paths (`/2/tweets`) are appended. */
      apiUrl: apiUrl.href.replace(/\/+$/, ""),
      authorizeUrl: authorizeUrl.href
    }
  })
}) {}
