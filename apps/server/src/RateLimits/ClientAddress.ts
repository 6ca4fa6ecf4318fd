import { type HttpServerRequest } from "@effect/platform"
import { Config, ConfigError, Effect, Either, Option } from "effect"
import { BlockList, isIP } from "node:net"

const ipFamily = (address: string) => (isIP(address) === 6 ? "ipv6" : "ipv4")

// Node reports IPv4 clients of a dual-stack socket as ::ffff:a.b.c.d.
const unmapped = (address: string) => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, "")

/** `TRUSTED_PROXIES`: comma-separated addresses and CIDR ranges, e.g. `10.0.0.0/8, ::1`. */
const trustedProxies = Config.array(Config.string(), "TRUSTED_PROXIES").pipe(
  Config.withDefault([]),
  Config.mapOrFail((entries) => {
    const list = new BlockList()
    for (const entry of entries.map((e) => e.trim()).filter((e) => e !== "")) {
      const [address, prefix] = entry.split("/")
      const bits = Number(prefix)
      const valid = isIP(address) !== 0 &&
        (prefix === undefined || (/^\d+$/.test(prefix) && bits <= (isIP(address) === 6 ? 128 : 32)))
      if (!valid) return Either.left(ConfigError.InvalidData([], `TRUSTED_PROXIES: ${entry} is not an address or CIDR range`))
      if (prefix === undefined) list.addAddress(address, ipFamily(address))
      else list.addSubnet(address, bits, ipFamily(address))
    }
    return Either.right(list)
  })
)

/**
 * The address a request comes from. `X-Forwarded-For` is believed only when the connection comes from a
 * trusted proxy, and then only as far back as the hops are trusted proxies themselves: the client is the
 * last hop no trusted proxy vouches for. Anyone else can write the header.
 */
export class ClientAddress extends Effect.Service<ClientAddress>()("ClientAddress", {
  effect: Effect.map(trustedProxies, (trusted) => {
    const isTrusted = (address: string) => isIP(address) !== 0 && trusted.check(address, ipFamily(address))
    return {
      of: (request: HttpServerRequest.HttpServerRequest): string => {
        let client = unmapped(Option.getOrElse(request.remoteAddress, () => "unknown"))
        if (!isTrusted(client)) return client
        const hops = (request.headers["x-forwarded-for"] ?? "").split(",").map((hop) => unmapped(hop.trim()))
        for (let i = hops.length - 1; i >= 0 && isTrusted(client); i--) {
          if (isIP(hops[i]) === 0) break
          client = hops[i]
        }
        return client
      }
    }
  })
}) {}
