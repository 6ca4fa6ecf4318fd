import { Schema } from "effect"

const supported = new Set(Intl.supportedValuesOf("timeZone"))

// Canonical IANA names live in these areas; links such as `US/Eastern` or `EST` do not.
const canonicalShape =
  /^(Africa|America|Antarctica|Arctic|Asia|Atlantic|Australia|Europe|Indian|Pacific)(\/[A-Z][A-Za-z0-9_+-]*)+$/

const resolve = (name: string): string | undefined => {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone
  } catch {
    return undefined
  }
}

/**
 * A name the runtime lists in `Intl.supportedValuesOf("timeZone")`, a canonical
 * IANA name that the runtime resolves to a listed one (the list may hold the old
 * `Asia/Calcutta` where users send `Asia/Kolkata`), or `UTC`.
 */
export const isSupportedTimezone = (name: string): boolean => {
  if (supported.has(name) || name === "UTC") return true
  if (!canonicalShape.test(name)) return false
  const resolved = resolve(name)
  return resolved !== undefined && supported.has(resolved)
}

export const Timezone = Schema.String.pipe(Schema.filter(isSupportedTimezone)).annotations({ identifier: "Timezone", description: "IANA timezone name, such as Europe/Paris or UTC" })
