import { Config, Effect } from "effect"

/** Where Telegram's Bot API is (`TELEGRAM_API_URL`; another address only for a test double or a local Bot API server). Read once, at start. */
export class TelegramSettings extends Effect.Service<TelegramSettings>()("TelegramSettings", {
  effect: Effect.gen(function*() {
    const apiUrl = yield* Config.url("TELEGRAM_API_URL").pipe(Config.withDefault(new URL("https://api.telegram.org")))
    return {
      /** Without a trailing slash: `/bot<token>/<method>` is appended. */
      apiUrl: apiUrl.href.replace(/\/+$/, "")
    }
  })
}) {}
