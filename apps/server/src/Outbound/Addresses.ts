import { isIPv4, isIPv6 } from "node:net"

interface Range {
  readonly name: string
  readonly base: bigint
  readonly prefix: number
}

const ipv4ToBigInt = (address: string): bigint =>
  address.split(".").reduce((value, part) => (value << 8n) | BigInt(Number(part)), 0n)

/** The eight 16-bit groups of an IPv6 address; the URL parser first writes it canonically, dotted quads in hex. */
const ipv6Groups = (address: string): ReadonlyArray<number> => {
  const canonical = new URL(`http://[${address}]`).hostname.slice(1, -1)
  const groups = (part: string | undefined) => part ? part.split(":").map((group) => parseInt(group, 16)) : []
  const [head, tail] = canonical.split("::")
  if (tail === undefined) return groups(head)
  const before = groups(head)
  const after = groups(tail)
  return [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after]
}

const ipv6ToBigInt = (groups: ReadonlyArray<number>): bigint =>
  groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n)

const range = (name: string, cidr: string): Range => {
  const [base, prefix] = cidr.split("/")
  return {
    name,
    base: isIPv4(base) ? ipv4ToBigInt(base) : ipv6ToBigInt(ipv6Groups(base)),
    prefix: Number(prefix)
  }
}

const find = (ranges: ReadonlyArray<Range>, bits: number, value: bigint) =>
  ranges.find(({ base, prefix }) => value >> BigInt(bits - prefix) === base >> BigInt(bits - prefix))?.name

// IANA's special-purpose registries, plus multicast and the reserved class E.
const ipv4Ranges = [
  range("unspecified", "0.0.0.0/8"),
  range("private", "10.0.0.0/8"),
  range("shared address space (CGNAT)", "100.64.0.0/10"),
  range("loopback", "127.0.0.0/8"),
  range("link-local", "169.254.0.0/16"),
  range("private", "172.16.0.0/12"),
  range("IETF protocol assignments", "192.0.0.0/24"),
  range("documentation", "192.0.2.0/24"),
  range("6to4 relay anycast", "192.88.99.0/24"),
  range("private", "192.168.0.0/16"),
  range("benchmarking", "198.18.0.0/15"),
  range("documentation", "198.51.100.0/24"),
  range("documentation", "203.0.113.0/24"),
  range("multicast", "224.0.0.0/4"),
  range("reserved", "240.0.0.0/4")
]

// Checked before the rule that an IPv6 address must be global unicast (2000::/3), to name the usual ones.
const ipv6Ranges = [
  range("unspecified", "::/128"),
  range("loopback", "::1/128"),
  range("IPv4-compatible (deprecated)", "::/96"),
  range("NAT64 local-use", "64:ff9b:1::/48"),
  range("discard-only", "100::/64"),
  range("IETF protocol assignments (Teredo, ORCHID, benchmarking)", "2001::/23"),
  range("documentation", "2001:db8::/32"),
  range("6to4", "2002::/16"),
  range("documentation", "3fff::/20"),
  range("unique local (private)", "fc00::/7"),
  range("link-local", "fe80::/10"),
  range("site-local (deprecated)", "fec0::/10"),
  range("multicast", "ff00::/8")
]

const globalUnicast = range("global unicast", "2000::/3")
const ipv4Mapped = range("IPv4-mapped", "::ffff:0:0/96")
const nat64 = range("NAT64", "64:ff9b::/96")

/**
 * Why Postline must not connect to this IP address (loopback, private, link-local, ...), or undefined for
 * a public address. IPv6 addresses that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, NAT64
 * `64:ff9b::a.b.c.d`) are judged by that IPv4 address; any other IPv6 address outside global unicast is refused.
 */
export const reservedRange = (address: string): string | undefined => {
  if (isIPv4(address)) return find(ipv4Ranges, 32, ipv4ToBigInt(address))
  const withoutZone = address.split("%")[0]
  if (!isIPv6(withoutZone)) return "not an IP address"
  const value = ipv6ToBigInt(ipv6Groups(withoutZone))
  for (const carrier of [ipv4Mapped, nat64]) {
    if (find([carrier], 128, value) !== undefined) {
      const embedded = find(ipv4Ranges, 32, value & 0xffffffffn)
      return embedded === undefined ? undefined : `${embedded} (${carrier.name})`
    }
  }
  return find(ipv6Ranges, 128, value) ??
    (find([globalUnicast], 128, value) === undefined ? "reserved (not global unicast)" : undefined)
}
