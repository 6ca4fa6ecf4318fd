import type { HttpServerRequest } from "@effect/platform"
import { Config, Effect, Option } from "effect"

// host[:port], by name, IPv4 or [IPv6]: a Host header that is anything else is not echoed into a link.
const hostAndPort = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/

/**
 * Where users reach this server, for the links it hands out (the device page, a network's redirect back): PUBLIC_URL,
 * else the Host the request came to, over http.
 */
export class PublicOrigin extends Effect.Service<PublicOrigin>()("PublicOrigin", {
  effect: Effect.gen(function*() {
    const publicUrl = yield* Config.option(Config.url("PUBLIC_URL"))
    const of = (request: HttpServerRequest.HttpServerRequest) =>
      Option.match(publicUrl, {
        onSome: (url) => url.href.replace(/\/+$/, ""),
        onNone: () => {
          const host = request.headers.host ?? ""
          return `http://${hostAndPort.test(host) ? host : "localhost"}`
        }
      })
    /** Whether PUBLIC_URL names the origin; else it comes from the request's Host. */
    const configured = Option.isSome(publicUrl)
    return { of, configured } as const
  })
}) {}
