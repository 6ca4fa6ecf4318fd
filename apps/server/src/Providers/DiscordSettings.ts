import { Config, Effect } from "effect"

/**
 * Where Discord's API is (`DISCORD_API_URL`, another address only for a test double). A webhook URL names its id
 * and token, and the calls go to this base with them, not to the host the user pasted. Read once, at start.
 */
export class DiscordSettings extends Effect.Service<DiscordSettings>()("DiscordSettings", {
  effect: Effect.gen(function*() {
    const apiUrl = yield* Config.url("DISCORD_API_URL").pipe(Config.withDefault(new URL("https://discord.com/api")))
    /** Without a trailing slash: paths (`/webhooks/…`) are appended. */
    return { apiUrl: apiUrl.href.replace(/\/+$/, "") }
  })
}) {}
