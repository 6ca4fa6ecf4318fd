/**
 * A FAKE of a Mastodon instance's OAuth server, part of MastodonFake.ts, built from Mastodon's documentation:
 * docs.joinmastodon.org/methods/apps ("Create an application"), docs.joinmastodon.org/methods/oauth
 * ("Authorize a user", "Obtain a token", "Revoke a token") and docs.joinmastodon.org/spec/oauth (PKCE with S256,
 * Mastodon 4.3). It checks what Doorkeeper checks there: a registered client, its exact redirect URI, scopes within
 * the app's, the client secret, a code used once by the client it was issued to, the same redirect URI and the PKCE
 * verifier of its challenge; a revoked token is refused from then on.
 */
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import type { IncomingHttpHeaders } from "node:http"

export interface FakeApp {
  readonly clientId: string
  readonly clientSecret: string
  readonly redirectUris: ReadonlyArray<string>
  readonly scopes: ReadonlyArray<string>
}

interface IssuedCode {
  readonly clientId: string
  readonly redirectUri: string
  readonly challenge: string | null
  readonly scope: string
  used: boolean
}

export interface OAuthAnswer {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly json?: unknown
  readonly html?: string
}

const random = () => randomBytes(24).toString("base64url")
const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")
const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** The parameters of a form or JSON body, as Doorkeeper takes both. */
const parametersOf = (headers: IncomingHttpHeaders, body: string): URLSearchParams => {
  if (String(headers["content-type"] ?? "").startsWith("application/json")) {
    const json = JSON.parse(body || "{}") as Record<string, unknown>
    return new URLSearchParams(Object.entries(json).map(([key, value]): [string, string] => [key, String(value)]))
  }
  return new URLSearchParams(body)
}

const basicClient = (headers: IncomingHttpHeaders) => {
  const authorization = String(headers.authorization ?? "")
  if (!authorization.startsWith("Basic ")) return undefined
  const [id, secret] = Buffer.from(authorization.slice(6), "base64").toString("utf8").split(":")
  return { id: decodeURIComponent(id ?? ""), secret: decodeURIComponent(secret ?? "") }
}

export const makeMastodonOAuth = () => {
  const apps: Array<FakeApp> = []
  const codes = new Map<string, IssuedCode>()
  const tokens = new Map<string, { readonly clientId: string; revoked: boolean }>()

  const oauthError = (status: number, error: string, description: string): OAuthAnswer =>
    ({ status, json: { error, error_description: description } })

  const consentPage = (query: URLSearchParams, app: FakeApp) => {
    const hidden = [...query].map(([name, value]) => `<input type="hidden" name="${escape(name)}" value="${escape(value)}">`).join("")
    return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Authorize · Fake Mastodon</title></head><body>
<h1>Authorization required</h1><p>${escape(app.clientId)} would like permission to access your account (${escape(query.get("scope") ?? "")}).</p>
<form method="post" action="/oauth/authorize">${hidden}<button name="decision" value="approve">Authorize</button></form>
<form method="post" action="/oauth/authorize">${hidden}<button name="decision" value="deny">Deny</button></form>
</body></html>`
  }

  /** Checks an authorization request as Doorkeeper does before it shows the consent page. */
  const checkAuthorization = (query: URLSearchParams): { app: FakeApp } | { refusal: string } => {
    const app = apps.find((candidate) => candidate.clientId === query.get("client_id"))
    if (app === undefined) return { refusal: "Client authentication failed due to unknown client" }
    if (!app.redirectUris.includes(query.get("redirect_uri") ?? "")) return { refusal: "The redirect uri included is not valid." }
    if (query.get("response_type") !== "code") return { refusal: "The authorization server does not support this response type." }
    const scopes = (query.get("scope") ?? "read").split(" ")
    if (!scopes.every((scope) => app.scopes.includes(scope))) return { refusal: "The requested scope is invalid, unknown, or malformed." }
    const method = query.get("code_challenge_method")
    if (query.has("code_challenge") && method !== "S256") return { refusal: "The code challenge method must be S256." }
    return { app }
  }

  const register = (parameters: URLSearchParams): OAuthAnswer => {
    const name = parameters.get("client_name") ?? ""
    const redirectUris = (parameters.get("redirect_uris") ?? "").split(/\s+/).filter((uri) => uri !== "")
    if (name === "") return { status: 422, json: { error: "Validation failed: Application name can't be blank" } }
    if (redirectUris.length === 0 || redirectUris.some((uri) => URL.parse(uri) === null)) {
      return { status: 422, json: { error: "Validation failed: Redirect URI must be an absolute URI." } }
    }
    const app: FakeApp = {
      clientId: random(),
      clientSecret: random(),
      redirectUris,
      scopes: (parameters.get("scopes") ?? "read").split(" ")
    }
    apps.push(app)
    return {
      status: 200,
      json: {
        id: String(apps.length),
        name,
        website: parameters.get("website"),
        scopes: app.scopes,
        redirect_uris: redirectUris,
        redirect_uri: redirectUris.join("\n"),
        client_id: app.clientId,
        client_secret: app.clientSecret
      }
    }
  }

  const decide = (form: URLSearchParams): OAuthAnswer => {
    const checked = checkAuthorization(form)
    if ("refusal" in checked) return { status: 400, html: `<p>${escape(checked.refusal)}</p>` }
    const redirect = new URL(form.get("redirect_uri")!)
    const state = form.get("state")
    if (form.get("decision") !== "approve") {
      redirect.searchParams.set("error", "access_denied")
      redirect.searchParams.set("error_description", "The resource owner or authorization server denied the request.")
    } else {
      const code = random()
      codes.set(code, {
        clientId: checked.app.clientId,
        redirectUri: redirect.toString(),
        challenge: form.get("code_challenge"),
        scope: form.get("scope") ?? "read",
        used: false
      })
      redirect.searchParams.set("code", code)
    }
    if (state !== null) redirect.searchParams.set("state", state)
    return { status: 302, headers: { location: redirect.toString() } }
  }

  const clientOf = (headers: IncomingHttpHeaders, parameters: URLSearchParams) => {
    const basic = basicClient(headers)
    const id = basic?.id ?? parameters.get("client_id")
    const secret = basic?.secret ?? parameters.get("client_secret")
    return apps.find((app) => app.clientId === id && app.clientSecret === secret)
  }

  const token = (headers: IncomingHttpHeaders, parameters: URLSearchParams): OAuthAnswer => {
    const app = clientOf(headers, parameters)
    if (app === undefined) return oauthError(401, "invalid_client", "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.")
    if (parameters.get("grant_type") !== "authorization_code") return oauthError(400, "unsupported_grant_type", "The authorization grant type is not supported by the authorization server.")
    const issued = codes.get(parameters.get("code") ?? "")
    const invalidGrant = oauthError(400, "invalid_grant", "The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.")
    if (issued === undefined || issued.used || issued.clientId !== app.clientId || issued.redirectUri !== parameters.get("redirect_uri")) return invalidGrant
    if (issued.challenge !== null && s256(parameters.get("code_verifier") ?? "") !== issued.challenge) return invalidGrant
    issued.used = true
    const accessToken = random()
    tokens.set(accessToken, { clientId: app.clientId, revoked: false })
    return { status: 200, json: { access_token: accessToken, token_type: "Bearer", scope: issued.scope, created_at: Math.floor(Date.now() / 1000) } }
  }

  const revoke = (headers: IncomingHttpHeaders, parameters: URLSearchParams): OAuthAnswer => {
    const app = clientOf(headers, parameters)
    if (app === undefined) return oauthError(403, "unauthorized_client", "You are not authorized to revoke this token")
    const issued = tokens.get(parameters.get("token") ?? "")
    if (issued !== undefined && issued.clientId === app.clientId) issued.revoked = true
    return { status: 200, json: {} }
  }

  /** The answer to an OAuth request, or undefined for a request of the API. */
  const answer = (method: string, path: string, headers: IncomingHttpHeaders, body: string): OAuthAnswer | undefined => {
    const url = new URL(path, "http://fake")
    if (method === "POST" && url.pathname === "/api/v1/apps") return register(parametersOf(headers, body))
    if (method === "GET" && url.pathname === "/oauth/authorize") {
      const checked = checkAuthorization(url.searchParams)
      return "refusal" in checked
        ? { status: 400, html: `<p>${escape(checked.refusal)}</p>` }
        : { status: 200, html: consentPage(url.searchParams, checked.app) }
    }
    if (method === "POST" && url.pathname === "/oauth/authorize") return decide(new URLSearchParams(body))
    if (method === "POST" && url.pathname === "/oauth/token") return token(headers, parametersOf(headers, body))
    if (method === "POST" && url.pathname === "/oauth/revoke") return revoke(headers, parametersOf(headers, body))
    return undefined
  }

  return {
    answer,
    apps: apps as ReadonlyArray<FakeApp>,
    /** Whether a token issued by signing in works (not revoked). */
    tokenWorks: (accessToken: string) => tokens.get(accessToken)?.revoked === false,
    /** Every token issued by signing in, and whether it was revoked. */
    issuedTokens: () => [...tokens].map(([accessToken, { revoked }]) => ({ accessToken, revoked }))
  }
}

/** What a person does at the instance's page: opens it, approves or denies; where the instance sends them back. */
export const consentAtMastodon = (authorizationUrl: string, decision: "approve" | "deny") =>
  Effect.promise(async () => {
    const page = await fetch(authorizationUrl)
    if (page.status !== 200) throw new Error(`The instance's page answered ${page.status}: ${await page.text()}`)
    const form = new URLSearchParams(new URL(authorizationUrl).searchParams)
    form.set("decision", decision)
    const decided = await fetch(new URL("/oauth/authorize", authorizationUrl), { method: "POST", body: form, redirect: "manual" })
    if (decided.status !== 302) throw new Error(`The instance's form answered ${decided.status}`)
    return decided.headers.get("location")!
  })
