import { lookup as dnsLookup } from "node:dns/promises"
import type { LookupAddress, LookupOptions } from "node:dns"
import { isIP } from "node:net"
import { reservedRange } from "./Addresses.js"
import { OutboundError } from "./OutboundError.js"

export type Resolver = (hostname: string) => Promise<ReadonlyArray<LookupAddress>>

const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true })

// A refusal that a setting lifts says which, for the caller to pass on to whoever runs the server.
const operatorMayAllow = (what: string) => `the server's operator can allow ${what} with OUTBOUND_ALLOW_PRIVATE=true`

export const hasUserInfo = (url: URL) => url.username !== "" || url.password !== ""

// fetch will not send a request to a URL with a user name or password; the message says so, naming the host only.
export const userInfoRefused = (url: URL) =>
  new OutboundError({ reason: "invalid_url", message: `${url.host}: an address with a user name or password is refused` })

const ipLiteralOf = (hostname: string) => hostname.replace(/^\[(.*)\]$/, "$1")

/**
 * Where an outbound client may call: its URL checks, and the resolution of host names that hands a connection
 * only checked addresses. Failures throw an `OutboundError`.
 */
export const makeAddressChecks = (allowPrivate: boolean, resolve: Resolver = systemResolver) => {
  const refusedAddress = (host: string, address: string): OutboundError | undefined => {
    const range = allowPrivate ? undefined : reservedRange(address)
    return range === undefined ? undefined : new OutboundError({
      reason: "refused_address",
      message: `${host} is refused: ${address} is a ${range} address (${operatorMayAllow("such addresses")})`
    })
  }

  /** Resolves, checks every address, and hands the connection the checked ones. */
  const checkedAddresses = async (hostname: string): Promise<ReadonlyArray<LookupAddress>> => {
    const addresses = await resolve(hostname).catch((cause) => {
      throw new OutboundError({ reason: "network", message: `${hostname} could not be resolved (${cause.code ?? cause})` })
    })
    if (addresses.length === 0) throw new OutboundError({ reason: "network", message: `${hostname} has no address` })
    for (const { address } of addresses) {
      const refused = refusedAddress(hostname, address)
      if (refused) throw refused
    }
    return addresses
  }

  /** undici's `connect.lookup`: a connection goes only to the addresses checked when it was made. */
  const lookup = (
    hostname: string,
    lookupOptions: LookupOptions,
    callback: (error: NodeJS.ErrnoException | null, address: string | Array<LookupAddress>, family?: number) => void
  ) => {
    checkedAddresses(hostname).then(
      (addresses) => {
        const wanted = lookupOptions.family === 4 || lookupOptions.family === 6
          ? addresses.filter(({ family }) => family === lookupOptions.family)
          : addresses
        if (lookupOptions.all) callback(null, [...wanted])
        else if (wanted[0]) callback(null, wanted[0].address, wanted[0].family)
        else callback(new OutboundError({ reason: "network", message: `${hostname} has no IPv${lookupOptions.family} address` }), "")
      },
      (error) => callback(error, "")
    )
  }

  /** The URL, if its scheme is allowed and it does not name a refused IP address literally. */
  const checkUrl = (text: string): URL => {
    const url = URL.canParse(text) ? new URL(text) : undefined
    if (url === undefined) throw new OutboundError({ reason: "invalid_url", message: "Not an absolute URL" })
    if (hasUserInfo(url)) throw userInfoRefused(url)
    if (url.protocol !== "https:" && !(url.protocol === "http:" && allowPrivate)) {
      throw new OutboundError({
        reason: "invalid_url",
        message: `${url.host}: only https addresses are allowed (${operatorMayAllow("http")})`
      })
    }
    const literal = ipLiteralOf(url.hostname)
    const refused = isIP(literal) ? refusedAddress(url.host, literal) : undefined
    if (refused) throw refused
    return url
  }

  /** Whether a call to this address would be allowed, resolving its host name as a call would. */
  const check = async (text: string): Promise<void> => {
    const { hostname } = checkUrl(text)
    if (isIP(ipLiteralOf(hostname)) === 0) await checkedAddresses(hostname)
  }

  return { lookup, checkUrl, check } as const
}
