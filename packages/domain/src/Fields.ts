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

const nul = "\\u0000"
const hasNoNul = (s: string) => !s.includes("\u0000")

/** A string PostgreSQL can store: text and jsonb refuse the NUL character. */
export const Text = Schema.String.pipe(Schema.filter(hasNoNul, { jsonSchema: { pattern: `^[^${nul}]*$` } }))

/**
 * White space for a character class, read alike by every regular expression engine: `\s` alone means other
 * characters in others (Python's takes U+001C to U+001F and U+0085, JavaScript's U+FEFF), which would let a client
 * or a fuzzer built on one of them call valid what the server refuses; with those named beside it, every engine
 * reads the same set. `\s` itself stays: its line ends (U+000A, U+000D, U+2028, U+2029) written as escapes would
 * break the generators that copy a pattern, unescaped, into a regular expression literal.
 */
export const whiteSpace = "\\s\\u001C-\\u001F\\u0085\\uFEFF"

/** Lengths as JSON Schema counts them (minLength, maxLength): in code points, not UTF-16 units. */
export const codePoints = (s: string) => [...s].length

/**
 * Text of `minLength` to `maxLength` code points, with a character that is not among `blankRanges`
 * and no NUL. The document gets one pattern for both: a second one would need `allOf`, which
 * client generators read as "unknown". Ranges are `whiteSpace` and escapes of characters that end no line,
 * not \p{...}: validators without Unicode regular expressions read them alike, and generators that
 * write a pattern out as a regular expression literal (unescaped) do not break it.
 */
export const visibleText = (options: {
  /** Ranges of a character class; `\s` in them stands for `whiteSpace`. */
  readonly blankRanges: string
  readonly minLength: number
  readonly maxLength: number
  /** Characters refused anywhere, besides NUL, as ranges of a character class (e.g. `/` for a folder's name). */
  readonly refusedRanges?: string
}) => {
  const refused = `${nul}${options.refusedRanges ?? ""}`
  const blank = options.blankRanges.replaceAll("\\s", whiteSpace)
  const pattern = `^[^${refused}]*[^${refused}${blank}][^${refused}]*$`
  const shape = new RegExp(pattern)
  return Schema.String.pipe(
    Schema.filter(
      (s) => codePoints(s) >= options.minLength && codePoints(s) <= options.maxLength && shape.test(s),
      {
        jsonSchema: {
          minLength: options.minLength,
          maxLength: options.maxLength,
          pattern
        }
      }
    )
  )
}

/** Names of organizations, teams and onboarding profiles: 2 to 64 code points, not blank. */
export const Name = visibleText({
  // White space (\s and U+0085, Unicode's White_Space) and the zero-width characters that make a name look blank.
  blankRanges: "\\s\\u0085\\u200B-\\u200D\\u2060",
  minLength: 2,
  maxLength: 64
}).annotations({
  identifier: "Name",
  description: "2 to 64 characters, not blank",
  ...invalidUnless("must be a string of 2 to 64 characters, not blank")
})

export const maxUrlLength = 2048

// Any character but white space and controls.
const visible = `[^${whiteSpace}\\u0000-\\u001F\\u007F]`

/**
 * The shape of an absolute http(s) URL written so that the URL parser takes it as written (it forgives spaces,
 * missing slashes and control characters; an address must need no forgiving, so it is stored exactly as sent).
 * Without `userInfo`, nothing the parser would take for a user name or password: whatever comes before an `@` in
 * the authority (after the slashes that follow the scheme, up to a `/`, `\`, `?` or `#`), even nothing. Whether
 * the host is one the parser takes (IDNA, an IPv6 or IPv4 address, its escapes, a port under 65536) the server
 * checks with the parser: a pattern that said it would generate mostly refused hosts (94 % of fast-check's samples
 * of one that tried, against 38 % for this one). Spelt without the i flag, so that the document's pattern is this
 * very one.
 */
export const httpUrlShape = (options: { readonly userInfo: boolean }) =>
  new RegExp(
    options.userInfo
      ? `^[Hh][Tt][Tt][Pp][Ss]?:\\/\\/${visible}+$`
      : `^[Hh][Tt][Tt][Pp][Ss]?:\\/\\/[/\\\\]*[^${whiteSpace}\\u0000-\\u001F\\u007F/\\\\?#@]+(?:[/\\\\?#]${visible}*)?$`
  )

const websiteShape = httpUrlShape({ userInfo: true })

const isHttpUrl = (s: string) =>
  codePoints(s) <= maxUrlLength && websiteShape.test(s) && URL.canParse(s) && new URL(s).hostname.length > 0

/**
 * An absolute http(s) URL. Not `format: uri`: that format refuses the non-ASCII
 * characters of international addresses, which the server accepts as written.
 */
export const WebsiteUrl = Schema.String.pipe(
  Schema.filter(isHttpUrl, { jsonSchema: { pattern: websiteShape.source, maxLength: maxUrlLength } })
).annotations({
  identifier: "WebsiteUrl",
  description: `An absolute http or https URL of at most ${maxUrlLength} characters, with a host, that parses as a URL`
})

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
