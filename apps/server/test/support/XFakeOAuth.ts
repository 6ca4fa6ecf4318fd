/**
 * The sign-in part of the FAKE X (XFake.ts), after docs.x.com/resources/fundamentals/authentication/oauth-2-0/
 * authorization-code and …/oauth-2-0/user-access-token: the consent page, the token endpoint (HTTP Basic, PKCE,
 * codes used once, refresh tokens rotated and a reused one revoking its grant), revocation, and the bearer check of
 * each API call with the scopes it needs.
 */
import { createHash, randomBytes } from "node:crypto"
import type { IncomingHttpHeaders } from "node:http"

export interface XGrant {
  readonly id: number
  readonly scope: ReadonlyArray<string>
  accessTokens: Array<{ readonly token: string; readonly expiresAt: number; revoked: boolean }>
  refreshToken: string | null
  /** The refresh tokens rotated away: one of them coming back revokes the grant. */
  readonly spentRefreshTokens: Array<string>
  refreshCount: number
  revoked: boolean
}
/** X's problem body (docs.x.com/x-api/fundamentals/response-codes-and-errors). */
export const problem = (status: number, title: string, detail: string, type = "about:blank") => ({ status, body: { title, detail, type, status } })
const knownScopes = new Set(["tweet.read", "tweet.write", "tweet.moderate.write", "users.read", "follows.read", "follows.write",
  "offline.access", "space.read", "mute.read", "mute.write", "like.read", "like.write", "list.read", "list.write",
  "block.read", "block.write", "bookmark.read", "bookmark.write", "media.write"])
const tokenError = (status: number, error: string, description: string) => ({ status, body: { error, error_description: description } })
const random = () => randomBytes(24).toString("base64url")
const s256 = (verifier: string) => createHash("sha256").update(verifier).digest("base64url")

export const makeXFakeOAuth = (app: {
  readonly clientId: string
  readonly clientSecret: string
  readonly redirectUris: ReadonlySet<string>
  readonly accessTokenSeconds: number
}) => {
  const { clientId, clientSecret, redirectUris } = app
  let accessTokenSeconds = app.accessTokenSeconds
  const grants: Array<XGrant> = []
  const pending = new Map<string, URLSearchParams>()
  const codes = new Map<string, { readonly request: URLSearchParams; used: boolean; grant?: XGrant }>()

  const issue = (grant: XGrant) => {
    const access = { token: random(), expiresAt: Date.now() + accessTokenSeconds * 1000, revoked: false }
    grant.accessTokens.push(access)
    grant.refreshToken = grant.scope.includes("offline.access") ? random() : null
    return {
      status: 200,
      body: {
        token_type: "bearer",
        expires_in: accessTokenSeconds,
        access_token: access.token,
        scope: grant.scope.join(" "),
        ...(grant.refreshToken ? { refresh_token: grant.refreshToken } : {})
      }
    }
  }
  const newGrant = (scope: ReadonlyArray<string>) => {
    const grant: XGrant = { id: grants.length + 1, scope, accessTokens: [], refreshToken: null, spentRefreshTokens: [], refreshCount: 0, revoked: false }
    grants.push(grant)
    return grant
  }
  const basicClient = (headers: IncomingHttpHeaders) => {
    const match = /^Basic (.+)$/.exec(headers.authorization ?? "")
    // As X's example shows it: the id and secret as they are, not form-encoded.
    return Buffer.from(match?.[1] ?? "", "base64").toString() === `${clientId}:${clientSecret}`
  }

  const token = (headers: IncomingHttpHeaders, form: URLSearchParams) => {
    if (!basicClient(headers)) return tokenError(401, "unauthorized_client", "Missing valid authorization header")
    const grantType = form.get("grant_type")
    if (grantType === "authorization_code") {
      const code = codes.get(form.get("code") ?? "")
      if (!code) return tokenError(400, "invalid_grant", "Value passed for the authorization code was invalid.")
      if (code.used) {
        // RFC 6749 4.1.2: a code used twice revokes what it gave.
        if (code.grant) code.grant.revoked = true
        return tokenError(400, "invalid_grant", "Value passed for the authorization code was invalid.")
      }
      code.used = true
      if (form.get("redirect_uri") !== code.request.get("redirect_uri")) return tokenError(400, "invalid_grant", "redirect_uri does not match")
      if (s256(form.get("code_verifier") ?? "") !== code.request.get("code_challenge")) return tokenError(400, "invalid_grant", "code_verifier does not match")
      code.grant = newGrant(code.request.get("scope")!.split(" "))
      return issue(code.grant)
    }
    if (grantType === "refresh_token") {
      const presented = form.get("refresh_token") ?? ""
      const reused = grants.find((grant) => grant.spentRefreshTokens.includes(presented))
      if (reused) reused.revoked = true
      const grant = grants.find((grant) => !grant.revoked && grant.refreshToken === presented)
      if (!grant) return tokenError(400, "invalid_grant", "Value passed for the token was invalid.")
      grant.spentRefreshTokens.push(presented)
      grant.refreshCount += 1
      return issue(grant)
    }
    return tokenError(400, "unsupported_grant_type", `grant_type ${grantType} is not supported`)
  }

  const revoke = (headers: IncomingHttpHeaders, form: URLSearchParams) => {
    if (!basicClient(headers)) return tokenError(401, "unauthorized_client", "Missing valid authorization header")
    const presented = form.get("token") ?? ""
    for (const grant of grants) {
      if (grant.refreshToken === presented) grant.revoked = true
      for (const access of grant.accessTokens) if (access.token === presented) access.revoked = true
    }
    return { status: 200, body: { revoked: true } }
  }

  const authorizePage = (query: URLSearchParams) => {
    if (query.get("client_id") !== clientId) return { status: 400, html: "<p>Something went wrong: unknown client_id.</p>" }
    // The one registered callback, exactly.
    if (!redirectUris.has(query.get("redirect_uri") ?? "")) return { status: 400, html: "<p>Something went wrong: redirect_uri not registered.</p>" }
    const scope = (query.get("scope") ?? "").split(" ")
    const invalid = query.get("response_type") !== "code" || query.get("code_challenge_method") !== "S256" ||
      !query.get("code_challenge") || !query.get("state") || scope.some((name) => !knownScopes.has(name))
    if (invalid) return { status: 400, html: "<p>Something went wrong: invalid request.</p>" }
    const id = random()
    pending.set(id, query)
    const form = (decision: string, label: string) =>
      `<form method="post" action="/i/oauth2/authorize"><input type="hidden" name="request" value="${id}"><input type="hidden" name="decision" value="${decision}"><button>${label}</button></form>`
    return { status: 200, html: `<h1>Postline wants to access your X account</h1><p>${scope.join(", ")}</p>${form("allow", "Authorize app")}${form("deny", "Cancel")}` }
  }

  const consent = (form: URLSearchParams) => {
    const request = pending.get(form.get("request") ?? "")
    if (!request) return { status: 400, location: null }
    pending.delete(form.get("request")!)
    const back = new URL(request.get("redirect_uri")!)
    if (form.get("decision") === "allow") {
      const code = random()
      codes.set(code, { request, used: false })
      back.search = new URLSearchParams({ state: request.get("state")!, code }).toString()
    } else {
      back.search = new URLSearchParams({ error: "access_denied", error_description: "The user denied the request", state: request.get("state")! }).toString()
    }
    return { status: 302, location: back.toString() }
  }

  // A refusal unless the bearer token is live and its grant holds every scope the call needs.
  const authorize = (headers: IncomingHttpHeaders, needs: ReadonlyArray<string>) => {
    const presented = /^Bearer (.+)$/.exec(headers.authorization ?? "")?.[1]
    const grant = grants.find((grant) => !grant.revoked && grant.accessTokens.some((access) => access.token === presented && !access.revoked && access.expiresAt > Date.now()))
    if (!grant) return problem(401, "Unauthorized", "Unauthorized")
    if (needs.some((scope) => !grant.scope.includes(scope))) return problem(403, "Forbidden", `Missing scope: ${needs.filter((scope) => !grant.scope.includes(scope)).join(", ")}`)
    return undefined
  }

  return {
    grants,
    issue,
    newGrant,
    token,
    revoke,
    authorizePage,
    consent,
    authorize,
    setAccessTokenSeconds: (seconds: number) => void (accessTokenSeconds = seconds)
  }
}
