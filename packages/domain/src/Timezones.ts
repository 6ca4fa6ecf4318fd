import { Schema } from "effect"

const listed = new Set(Intl.supportedValuesOf("timeZone"))

/**
 * Canonical IANA names (tzdata 2025) whose zones ICU still lists under an
 * older name: users send `Asia/Kolkata`, Node's ICU lists `Asia/Calcutta`.
 */
const renamedZones = [
  "Africa/Asmara",
  "America/Argentina/Buenos_Aires",
  "America/Argentina/Catamarca",
  "America/Argentina/Cordoba",
  "America/Argentina/Jujuy",
  "America/Argentina/Mendoza",
  "America/Atikokan",
  "America/Indiana/Indianapolis",
  "America/Kentucky/Louisville",
  "America/Nuuk",
  "Asia/Ho_Chi_Minh",
  "Asia/Kathmandu",
  "Asia/Kolkata",
  "Asia/Yangon",
  "Atlantic/Faroe",
  "Europe/Kyiv",
  "Pacific/Chuuk",
  "Pacific/Kanton",
  "Pacific/Pohnpei"
]

const resolvesToListed = (name: string) => {
  try {
    return listed.has(new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone)
  } catch {
    return false
  }
}

/**
 * The names a team may use, spelled exactly so: every zone the runtime lists,
 * the current names of those it lists under an old one, and `UTC` (`Etc/UTC`),
 * which every runtime supports though the list leaves it out.
 */
const supported: ReadonlySet<string> = new Set([
  ...listed,
  ...renamedZones.filter(resolvesToListed),
  "UTC",
  "Etc/UTC"
])

export const isSupportedTimezone = (name: string): boolean => supported.has(name)

/**
 * The names the server takes, in the document as an enum so that clients and fuzzers know them: the list is the
 * runtime's (Node.js pinned in package.json's engines and .nvmrc), and `pnpm openapi` writes it anew when a
 * Node.js update brings new zones.
 */
export const Timezone = Schema.String.pipe(
  Schema.filter(isSupportedTimezone, { jsonSchema: { enum: [...supported].sort() } })
).annotations({
  identifier: "Timezone",
  arbitrary: () => (fc) => fc.constantFrom(...supported),
  description: "IANA timezone name, such as Europe/Paris, Asia/Kolkata or UTC: one the server supports (Node.js's " +
    "own list, the current names of zones listed under an old one, UTC and Etc/UTC)"
})
