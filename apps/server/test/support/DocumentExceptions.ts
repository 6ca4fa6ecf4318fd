/**
 * What the server refuses though `openapi.json` cannot say it, each said in its
 * field's description instead; in one place, so that the parity tests skip these
 * and nothing else. A value is an exception when some property of this name,
 * anywhere in the input, holds a value the rule refuses.
 */
export interface DocumentException {
  readonly property: string
  readonly rule: string
  readonly refuses: (value: unknown) => boolean
}

const parsesWithHost = (url: string) => URL.canParse(url) && new URL(url).hostname !== ""

const url = (property: string): DocumentException => ({
  property,
  rule: "parses as a URL (WHATWG) with a host",
  refuses: (value) => typeof value === "string" && !parsesWithHost(value)
})

export const documentExceptions: ReadonlyArray<DocumentException> = [
  {
    property: "expiresAt",
    rule: "in the future and before year 9999 (UTC)",
    refuses: (value) =>
      typeof value === "string" && !(Date.parse(value) > Date.now() && Date.parse(value) < Date.UTC(9999, 0, 1))
  },
  url("website"),
  url("serviceUrl"),
  url("instanceUrl"),
  url("url"),
  url("returnUrl"),
  url("returnTo"),
  {
    property: "socialAccountIds",
    rule: "distinct ids, compared without regard to case (uniqueItems compares them as written)",
    refuses: (value) =>
      Array.isArray(value) &&
      new Set(value.map((id) => String(id).toLowerCase())).size !== value.length
  },
  {
    property: "versions",
    rule: "at most one version per social account (uniqueItems cannot compare one property of its items)",
    refuses: (value) =>
      Array.isArray(value) &&
      new Set(value.map((version) => String(version?.socialAccountId).toLowerCase())).size !== value.length
  }
]

const holdsException = (value: unknown): boolean => {
  if (Array.isArray(value)) return value.some(holdsException)
  if (value === null || typeof value !== "object") return false
  return Object.entries(value).some(([name, property]) =>
    documentExceptions.some((exception) => exception.property === name && exception.refuses(property)) ||
    holdsException(property)
  )
}

/** Whether the server may refuse this document-valid input for a rule of `documentExceptions`. */
export const isDocumentedException = holdsException
