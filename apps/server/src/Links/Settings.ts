import { Config, Effect, Option } from "effect"

/**
 * Where short links point: `<PUBLIC_URL>/l/<code>`. A short link needs an
 * address that the post's readers can reach, so without PUBLIC_URL links are
 * sent as written, untracked; that is said once, at start.
 */
export class LinkSettings extends Effect.Service<LinkSettings>()("Links/Settings", {
  effect: Effect.gen(function*() {
    const publicUrl = yield* Config.option(Config.url("PUBLIC_URL"))
    const base = Option.map(publicUrl, (url) => url.href.replace(/\/+$/, ""))
    if (Option.isNone(base)) {
      yield* Effect.logInfo("PUBLIC_URL is not set: links in posts are sent as written, without link tracking")
    }
    return {
      /** `<PUBLIC_URL>` without a trailing slash; null when it is not set. */
      base: Option.getOrNull(base)
    } as const
  })
}) {}
