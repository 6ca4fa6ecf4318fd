import type { Failure } from "./Output.js"

/**
 * The exit status of every command, by the `_tag` of the error it ended with: the API's errors, the SDK's, the
 * CLI's own and @effect/cli's refusals of the command line. An entry `Tag: reason` takes the server's refusals of
 * that reason out of their `_tag`'s row, where a script would act otherwise on them. Scripts branch on these, so
 * they are part of the CLI's contract: `postline --help` prints this table, and the README's copy is checked
 * against it.
 */
export const exitCodes = [
  { code: 0, meaning: "ok (a publish's answer, whatever its outcome: read it)", tags: [] },
  {
    code: 2,
    meaning: "usage: options, arguments, a file or standard input refused (by the CLI, by the API's schemas before " +
      "sending, or by the server: 400, 413, 415), a confirmation needed without a terminal",
    tags: [
      "ValidationError",
      "UsageError",
      "FileUnreadable",
      "ParseError",
      "HttpApiDecodeError",
      "BadRequest",
      "OAuthError",
      "PayloadTooLarge",
      "UnsupportedMediaType"
    ]
  },
  {
    code: 3,
    meaning: "auth: not logged in or no credentials, login ended or refused, token refused (401), role refused (403)",
    tags: ["Unauthorized", "Forbidden", "LoginRequired", "NotConfigured", "DeviceLoginFailed"]
  },
  { code: 4, meaning: "not found (404)", tags: ["NotFound"] },
  {
    code: 5,
    meaning: "conflict (409): already published or publishing, not a draft, storage quota (the reason says which)",
    tags: ["Conflict", "QuotaExceeded"]
  },
  { code: 6, meaning: "payment required (402): not enough credits, nothing sent", tags: ["PaymentRequired"] },
  { code: 7, meaning: "rate limited (429): try again later", tags: ["TooManyRequests"] },
  // Not 6: more credits would not help; a higher cap, or the next month, does.
  {
    code: 8,
    meaning: "spend cap reached (402): the organization's monthly spend cap stops it, nothing sent; an admin or owner " +
      "raises it (billing spend-cap), or it waits for the next month",
    tags: ["PaymentRequired: spend_cap_reached"]
  },
  {
    code: 1,
    meaning: "anything else: the server unreachable or failing, a publish whose outcome is unknown (repeat it with " +
      "the --idempotency-key printed), a request too slow (408) or with headers too large (431), a confirmation answered no, " +
      "an account connect by signing in that was denied, failed or expired",
    tags: [
      "ServerUnreachable",
      "PublishInDoubt",
      "RequestTimeout",
      "RequestHeaderFieldsTooLarge",
      "Cancelled",
      "AccountConnectFailed",
      "AccountConnectExpired"
    ]
  }
] as const

const byTag = new Map<string, number>(exitCodes.flatMap(({ code, tags }) => tags.map((tag) => [tag, code] as const)))

export const usageExitCode = 2

/** The exit status of a failure: its `Tag: reason` entry's, else its `_tag`'s; 1 for any other. */
export const exitCodeOf = (failure: Pick<Failure, "_tag" | "reason">): number =>
  (failure.reason === undefined ? undefined : byTag.get(`${failure._tag}: ${failure.reason}`)) ?? byTag.get(failure._tag) ?? 1

/** The table as text, for `--help`: each status, what it means, and the `_tag`s (as `--json` prints them) it stands for. */
export const exitCodeLines = exitCodes.map(({ code, meaning, tags }) =>
  tags.length === 0 ? `${code}  ${meaning}` : `${code}  ${meaning} [${tags.join(", ")}]`
)
