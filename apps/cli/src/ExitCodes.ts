/**
 * The exit status of every command, by the `_tag` of the error it ended with: the API's errors, the SDK's, the
 * CLI's own and @effect/cli's refusals of the command line. Scripts branch on these, so they are part of the CLI's
 * contract: the README and `postline --help` print this table.
 */
export const exitCodes = [
  { code: 0, meaning: "ok", tags: [] },
  {
    code: 2,
    meaning: "usage: options or arguments refused (by the CLI or the server's 400), a confirmation needed without a terminal",
    tags: ["ValidationError", "UsageError", "HttpApiDecodeError", "BadRequest", "PayloadTooLarge", "UnsupportedMediaType", "FileUnreadable"]
  },
  {
    code: 3,
    meaning: "auth: not logged in or no credentials, login ended or refused, token refused (401), role refused (403)",
    tags: ["Unauthorized", "Forbidden", "LoginRequired", "NotConfigured", "DeviceLoginFailed"]
  },
  { code: 4, meaning: "not found (404)", tags: ["NotFound"] },
  { code: 5, meaning: "conflict (409): already published or publishing, not a draft, storage quota", tags: ["Conflict", "QuotaExceeded"] },
  { code: 6, meaning: "payment required (402): not enough credits, nothing sent", tags: ["PaymentRequired"] },
  { code: 7, meaning: "rate limited (429): try again later", tags: ["TooManyRequests"] },
  { code: 1, meaning: "anything else: the server unreachable or failing, a confirmation answered no", tags: [] }
] as const

const byTag = new Map<string, number>(exitCodes.flatMap(({ code, tags }) => tags.map((tag) => [tag, code] as const)))

export const usageExitCode = 2

/** The exit status for an error with this `_tag`; 1 for any other. */
export const exitCodeOf = (tag: string): number => byTag.get(tag) ?? 1

/** The table as text, for `--help` and the README. */
export const exitCodeLines = exitCodes.map(({ code, meaning }) => `${code}  ${meaning}`)
