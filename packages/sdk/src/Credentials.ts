import { Effect, Option, Redacted } from "effect"
import { NotConfigured } from "./Errors.js"
import type { StoredLogin } from "./TokenStore.js"

export const defaultBaseUrl = "http://localhost:3000"
export const defaultClientId = "postline-sdk"

/** Where the bearer came from. */
export type CredentialsSource = "api-key" | "access-token" | "login"

/** A base URL without its trailing slashes, so that two spellings of one server compare equal. */
export const normalizeBaseUrl = (url: string) => url.trim().replace(/\/+$/, "")

const nonEmpty = (value: string | undefined) => (value === undefined || value.trim() === "" ? undefined : value.trim())

const asSecret = (value: string | Redacted.Redacted | undefined): Redacted.Redacted | undefined => {
  if (value === undefined) return undefined
  const text = Redacted.isRedacted(value) ? Redacted.value(value) : value
  return text.trim() === "" ? undefined : Redacted.make(text.trim())
}

/** The server: the one given, else `POSTLINE_URL`, else the stored login's, else `http://localhost:3000`. */
export const chooseBaseUrl = (
  given: string | undefined,
  env: Record<string, string | undefined>,
  stored: Option.Option<StoredLogin>
) =>
  normalizeBaseUrl(
    nonEmpty(given) ?? nonEmpty(env.POSTLINE_URL) ?? Option.getOrUndefined(Option.map(stored, (login) => login.baseUrl)) ??
      defaultBaseUrl
  )

const notConfigured = new NotConfigured({
  message: "No Postline credentials: set POSTLINE_API_KEY (an organization's API key, plk_…) or POSTLINE_TOKEN " +
    "(an access token, plt_…), or run `postline login`"
})

/** The credentials chosen: a fixed bearer, or the stored device login. */
export type ChosenCredentials =
  | { readonly source: "api-key" | "access-token"; readonly token: Redacted.Redacted }
  | { readonly source: "login"; readonly login: StoredLogin }

/**
 * The credentials: an API key or access token given, else one in the environment (`POSTLINE_API_KEY` before
 * `POSTLINE_TOKEN`), else the stored login when it is `baseUrl`'s; none is `NotConfigured`.
 */
export const chooseCredentials = (
  given: { readonly apiKey?: string | Redacted.Redacted | undefined; readonly token?: string | Redacted.Redacted | undefined },
  env: Record<string, string | undefined>,
  stored: Option.Option<StoredLogin>,
  baseUrl: string
): Effect.Effect<ChosenCredentials, NotConfigured> => {
  const fixed: ReadonlyArray<readonly ["api-key" | "access-token", Redacted.Redacted | undefined]> = [
    ["api-key", asSecret(given.apiKey)],
    ["access-token", asSecret(given.token)],
    ["api-key", asSecret(env.POSTLINE_API_KEY)],
    ["access-token", asSecret(env.POSTLINE_TOKEN)]
  ]
  for (const [source, token] of fixed) {
    if (token !== undefined) return Effect.succeed({ source, token })
  }
  if (Option.isNone(stored)) return Effect.fail(notConfigured)
  const login = stored.value
  if (normalizeBaseUrl(login.baseUrl) !== baseUrl) {
    return Effect.fail(
      new NotConfigured({
        message: `The stored login is for ${login.baseUrl}, not ${baseUrl}: run \`postline login\` for ${baseUrl}, ` +
          "or set POSTLINE_API_KEY or POSTLINE_TOKEN"
      })
    )
  }
  return Effect.succeed({ source: "login", login })
}
