import { Schema } from "effect"

/**
 * Gives a field one issue with this message whatever went wrong inside it,
 * rather than one issue per member of a union.
 */
export const invalidUnless = (message: string) => ({ message: () => ({ message, override: true }) })

/** An optional property of a request: absent or valid, never `undefined`. */
export const optional = <S extends Schema.Schema.Any>(schema: S) => Schema.optionalWith(schema, { exact: true })

/** One of a set of strings. */
export const oneOf = <const Values extends ReadonlyArray<string>>(...values: Values) =>
  Schema.Literal(...values).annotations(invalidUnless(`must be one of ${values.join(", ")}`))

/** Identifiers are UUIDs, case-insensitive on input. */
export const Uuid = Schema.String.pipe(
  Schema.pattern(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/)
).annotations(invalidUnless("must be a UUID (8-4-4-4-12 hexadecimal digits)"))

const codePoints = (s: string) => [...s].length

/** Names of organizations, teams and onboarding profiles: 2 to 64 code points, not blank. */
export const Name = Schema.String.pipe(
  Schema.filter((s) => codePoints(s) >= 2 && codePoints(s) <= 64 && s.trim().length > 0, {
    jsonSchema: { minLength: 2, maxLength: 64 }
  })
).annotations({
  identifier: "Name",
  description: "2 to 64 characters, not blank",
  ...invalidUnless("must be a string of 2 to 64 characters, not blank")
})

const isHttpUrl = (s: string) => {
  if (!URL.canParse(s)) return false
  const { protocol, hostname } = new URL(s)
  return (protocol === "http:" || protocol === "https:") && hostname.length > 0
}

/** An absolute http(s) URL. */
export const WebsiteUrl = Schema.String.pipe(
  Schema.filter(isHttpUrl, { jsonSchema: { format: "uri" } })
).annotations({ identifier: "WebsiteUrl", description: "An absolute http or https URL" })

/** ISO 8601 UTC timestamp, as the contract types it: a plain string. */
export const Timestamp = Schema.String.annotations({
  identifier: "Timestamp",
  description: "ISO 8601 UTC timestamp"
})

/** For request objects: unknown properties are rejected and every issue is reported. */
export const strict = {
  parseOptions: { onExcessProperty: "error", errors: "all" },
  message: () => "must be a JSON object"
} as const
