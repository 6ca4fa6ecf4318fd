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

/** A string PostgreSQL can store: text and jsonb refuse the NUL character. */
export const Text = Schema.String.pipe(Schema.filter((s) => !s.includes("\u0000")))

const codePoints = (s: string) => [...s].length

// White space and the invisible characters that make a name look blank.
const invisible = /[\p{White_Space}\u200B-\u200D\u2060\uFEFF]/gu
const isBlank = (s: string) => s.replace(invisible, "").length === 0

/** Names of organizations, teams and onboarding profiles: 2 to 64 code points, not blank. */
export const Name = Text.pipe(
  Schema.filter((s) => codePoints(s) >= 2 && codePoints(s) <= 64 && !isBlank(s), {
    jsonSchema: { minLength: 2, maxLength: 64 }
  })
).annotations({
  identifier: "Name",
  description: "2 to 64 characters, not blank",
  ...invalidUnless("must be a string of 2 to 64 characters, not blank")
})

export const maxUrlLength = 2048

// The URL parser forgives spaces, missing slashes and control characters; a
// website must need no forgiving, so it is stored exactly as sent.
const httpUrlShape = /^https?:\/\/[^\s\u0000-\u001F\u007F]+$/i

const isHttpUrl = (s: string) =>
  s.length <= maxUrlLength && httpUrlShape.test(s) && URL.canParse(s) && new URL(s).hostname.length > 0

/** An absolute http(s) URL. */
export const WebsiteUrl = Schema.String.pipe(
  Schema.filter(isHttpUrl, { jsonSchema: { format: "uri", maxLength: maxUrlLength } })
).annotations({ identifier: "WebsiteUrl", description: `An absolute http or https URL of at most ${maxUrlLength} characters` })

/** A whole number (Schema.Int alone would be titled "int" in the document). */
export const integer = (description: string) =>
  Schema.Number.pipe(Schema.filter(Number.isInteger, { jsonSchema: { type: "integer", description } }))

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
