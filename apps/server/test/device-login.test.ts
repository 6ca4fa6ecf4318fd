import { describe, expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Duration, Effect, Either, HashMap, identity, Layer, Logger, TestClock } from "effect"
import { createHash } from "node:crypto"
import { request as httpRequest } from "node:http"
import { createServer } from "node:net"
import { ApprovalRateLimit } from "../src/Auth/ApprovalRateLimit.js"
import { makeHttpLive } from "../src/Api.js"
import { freshTestStorage } from "./support/TestStorage.js"
import { SoleProcess } from "../src/Database/SoleProcess.js"
import { SchedulerLive } from "../src/Workers.js"
import { LocalOAuthNetworks, LocalProviders } from "./support/Providers.js"
import { UsersRepo } from "../src/Users/Repo.js"
import { hashSecret } from "../src/Users/Secrets.js"
import { TestDatabase } from "./support/TestDatabase.js"
import {
  clientId,
  deviceCodeGrant,
  newCode,
  password,
  poll,
  postForm,
  requestCode,
  userWithPassword
} from "./support/DeviceLogin.js"
import { InProcessHttpServer, raw, type RawResponse, signUp, TestCipher, TestServer } from "./support/TestServer.js"

const userCodeShape = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/

const refresh = (refreshToken: string, client = clientId) =>
  postForm("/v1/auth/token", { grant_type: "refresh_token", refresh_token: refreshToken, client_id: client })

const revoke = (token: string) => postForm("/v1/auth/revoke", { token })

const submitApproval = (fields: { email: string; password: string; user_code: string; action: string }) =>
  postForm("/device", fields)

const listOrganizations = (token: string) => raw({ method: "GET", path: "/v1/organizations", token })

const expectNoStore = (response: RawResponse) => {
  expect(response.headers.get("cache-control")).toBe("no-store")
  expect(response.headers.get("pragma")).toBe("no-cache")
}

const expectOAuthError = (response: RawResponse, error: string) => {
  expect(response.status, JSON.stringify(response.body)).toBe(400)
  expect(response.contentType).toMatch(/^application\/json/)
  expect(Object.keys(response.body).sort()).toEqual(["_tag", "error", "error_description", "message"])
  expect(response.body._tag).toBe("OAuthError")
  expect(response.body.error).toBe(error)
  expect(response.body.error_description).toMatch(/\S/)
  expect(response.body.message).toBe(response.body.error_description)
  expectNoStore(response)
}

/** A user who approved a device login, and the tokens the device got. */
const deviceLogin = Effect.gen(function*() {
  const account = yield* userWithPassword
  const code = yield* newCode
  const approval = yield* submitApproval({ email: account.user.email, password, user_code: code.user_code, action: "approve" })
  expect(approval.status).toBe(200)
  const response = yield* poll(code.device_code)
  expect(response.status).toBe(200)
  const tokens = response.body as { access_token: string; refresh_token: string }
  return { account, code, tokens }
})

const deviceRow = (deviceCode: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ status: string; intervalSeconds: number; userCode: string; clientId: string; scope: string | null; userId: string | null; lifetime: number }>`
      SELECT status, interval_seconds AS "intervalSeconds", user_code AS "userCode", client_id AS "clientId", scope,
        user_id AS "userId",
        extract(epoch FROM expires_at - created_at)::int AS lifetime
      FROM device_authorizations WHERE device_code_hash = ${hashSecret(deviceCode)}`).pipe(Effect.map((rows) => rows[0]))

const serverPort = Effect.map(HttpServer.HttpServer, (server) => (server.address as HttpServer.TcpAddress).port)

layer(TestServer, { excludeTestServices: true })("device login", (it) => {
  describe("device authorization request", () => {
    it.effect("answers the RFC 8628 fields, form-encoded or JSON, and stores the code hashed and normalized", () =>
      Effect.gen(function*() {
        const port = yield* serverPort
        const viaForm = yield* requestCode({ client_id: clientId, scope: "posts:write", unknown_parameter: "ignored" })
        const viaJson = yield* raw({ method: "POST", path: "/v1/auth/device/code", json: { client_id: "mcp-server" } })
        for (const response of [viaForm, viaJson]) {
          expect(response.status).toBe(200)
          expectNoStore(response)
          const body = response.body
          expect(Object.keys(body).sort()).toEqual([
            "device_code",
            "expires_in",
            "interval",
            "user_code",
            "verification_uri",
            "verification_uri_complete"
          ])
          expect(body.device_code).toMatch(/^pld_[A-Za-z0-9_-]{43}$/)
          expect(body.user_code).toMatch(userCodeShape)
          expect(body.verification_uri).toBe(`http://127.0.0.1:${port}/device`)
          expect(body.verification_uri_complete).toBe(`http://127.0.0.1:${port}/device?user_code=${body.user_code}`)
          expect(body.expires_in).toBe(900)
          expect(body.interval).toBe(5)
        }
        expect(viaForm.body.device_code).not.toBe(viaJson.body.device_code)
        expect(yield* deviceRow(viaForm.body.device_code)).toEqual({
          status: "pending",
          intervalSeconds: 5,
          userCode: viaForm.body.user_code.replace("-", ""),
          clientId,
          scope: "posts:write",
          userId: null,
          lifetime: 900
        })
        expect((yield* deviceRow(viaJson.body.device_code)).clientId).toBe("mcp-server")
      }))

    it.effect("needs no bearer token, and ignores a bad one", () =>
      Effect.gen(function*() {
        const response = yield* postForm("/v1/auth/device/code", { client_id: clientId }, { authorization: "Bearer nonsense" })
        expect(response.status).toBe(200)
      }))

    it.effect("deletes authorizations that expired over an hour ago when a code is requested, and keeps recent ones", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const old = yield* newCode
        const recent = yield* newCode
        yield* sql`UPDATE device_authorizations SET expires_at = now() - interval '2 hours'
          WHERE device_code_hash = ${hashSecret(old.device_code)}`
        yield* sql`UPDATE device_authorizations SET expires_at = now() - interval '30 minutes'
          WHERE device_code_hash = ${hashSecret(recent.device_code)}`
        yield* newCode
        expect(yield* deviceRow(old.device_code)).toBeUndefined()
        // A late poll of a recently expired code still learns why.
        expect((yield* deviceRow(recent.device_code)).status).toBe("pending")
        expectOAuthError(yield* poll(recent.device_code), "expired_token")
      }))

    it.effect("refuses missing or malformed parameters and other content types with invalid_request", () =>
      Effect.gen(function*() {
        const path = "/v1/auth/device/code"
        const missing = yield* requestCode({})
        expectOAuthError(missing, "invalid_request")
        expect(missing.body.error_description).toContain("client_id")
        expectOAuthError(yield* requestCode({ client_id: "" }), "invalid_request")
        expectOAuthError(yield* requestCode({ client_id: "tab\tinside" }), "invalid_request")
        expectOAuthError(yield* requestCode({ client_id: clientId, scope: "bad\"scope" }), "invalid_request")
        expectOAuthError(yield* postForm(path, "client_id=a&client_id=b"), "invalid_request")
        expectOAuthError(yield* raw({ method: "POST", path, json: { client_id: 42 } }), "invalid_request")
        expectOAuthError(yield* raw({ method: "POST", path, json: [clientId] }), "invalid_request")
        expectOAuthError(
          yield* raw({ method: "POST", path, headers: { "content-type": "application/json" }, body: "{not json" }),
          "invalid_request"
        )
        expectOAuthError(yield* raw({ method: "POST", path, body: `client_id=${clientId}` }), "invalid_request")
        expectOAuthError(
          yield* raw({ method: "POST", path, headers: { "content-type": "text/plain" }, body: `client_id=${clientId}` }),
          "invalid_request"
        )
      }))
  })

  describe("token endpoint", () => {
    it.effect("answers authorization_pending, then slow_down to the second of two polls at once, and grows the interval by 5", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const code = yield* newCode
        const both = yield* Effect.all([poll(code.device_code), poll(code.device_code)], { concurrency: "unbounded" })
        for (const response of both) expectOAuthError(response, response.body.error)
        expect(both.map((response) => response.body.error).sort()).toEqual(["authorization_pending", "slow_down"])
        expect((yield* deviceRow(code.device_code)).intervalSeconds).toBe(10)

        // A poll after the grown interval is in time; one right after it is not.
        yield* sql`UPDATE device_authorizations SET last_polled_at = now() - interval '11 seconds'
          WHERE device_code_hash = ${hashSecret(code.device_code)}`
        expectOAuthError(yield* poll(code.device_code), "authorization_pending")
        expect((yield* deviceRow(code.device_code)).intervalSeconds).toBe(10)
        const tooSoon = yield* poll(code.device_code)
        expectOAuthError(tooSoon, "slow_down")
        expect(tooSoon.body.error_description).toContain("15 seconds")
        expect((yield* deviceRow(code.device_code)).intervalSeconds).toBe(15)
      }))

    it.effect("after approval, answers tokens once; the access token works and the login is recorded", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const account = yield* userWithPassword
        const code = yield* newCode
        expectOAuthError(yield* poll(code.device_code), "authorization_pending")
        const page = yield* raw({ method: "GET", path: `/device?user_code=${code.user_code}` })
        expect(page.body).toContain(`value="${code.user_code}"`)
        // Typed as people do: lower case, without the dash.
        const approval = yield* submitApproval({
          email: account.user.email.toUpperCase(),
          password,
          user_code: code.user_code.replace("-", "").toLowerCase(),
          action: "approve"
        })
        expect(approval.status).toBe(200)
        expect(approval.contentType).toBe("text/html; charset=utf-8")
        expect(approval.body).toContain("Device approved")
        expect(approval.body).toContain(clientId)

        // The approval does not count as a poll: the device may poll at once.
        const response = yield* poll(code.device_code)
        expect(response.status).toBe(200)
        expectNoStore(response)
        expect(Object.keys(response.body).sort()).toEqual(["access_token", "expires_in", "refresh_token", "token_type"])
        expect(response.body.access_token).toMatch(/^plt_[A-Za-z0-9_-]{43}$/)
        expect(response.body.refresh_token).toMatch(/^plr_[A-Za-z0-9_-]{43}$/)
        expect(response.body.token_type).toBe("Bearer")
        expect(response.body.expires_in).toBe(3600)

        const organizations = yield* listOrganizations(response.body.access_token)
        expect(organizations.status).toBe(200)
        expect(organizations.body.total).toBe(0)
        const [login] = yield* sql<{ userId: string; clientId: string; accessLifetime: number; refreshLifetime: number }>`
          SELECT l.user_id AS "userId", l.client_id AS "clientId",
            extract(epoch FROM a.expires_at - a.created_at)::int AS "accessLifetime",
            extract(epoch FROM r.expires_at - r.created_at)::int AS "refreshLifetime"
          FROM logins l JOIN access_tokens a ON a.login_id = l.id JOIN refresh_tokens r ON r.login_id = l.id
          WHERE a.token_hash = ${hashSecret(response.body.access_token)}
            AND r.token_hash = ${hashSecret(response.body.refresh_token)}`
        expect(login).toEqual({ userId: account.user.id, clientId, accessLifetime: 3600, refreshLifetime: 30 * 24 * 3600 })
        expect((yield* deviceRow(code.device_code)).status).toBe("redeemed")

        const again = yield* poll(code.device_code)
        expectOAuthError(again, "invalid_grant")
        const [{ count }] = yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM logins WHERE user_id = ${account.user.id}`
        expect(count).toBe(1)
      }))

    it.effect("of two polls at once after approval, one gets the tokens and the other invalid_grant", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const account = yield* userWithPassword
        const code = yield* newCode
        const approval = yield* submitApproval({ email: account.user.email, password, user_code: code.user_code, action: "approve" })
        expect(approval.status).toBe(200)
        const both = yield* Effect.all([poll(code.device_code), poll(code.device_code)], { concurrency: "unbounded" })
        expect(both.map((response) => response.status).sort()).toEqual([200, 400])
        expectOAuthError(both.find((response) => response.status === 400)!, "invalid_grant")
        const [{ count }] = yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM logins WHERE user_id = ${account.user.id}`
        expect(count).toBe(1)
      }))

    it.effect("answers access_denied once the user denies", () =>
      Effect.gen(function*() {
        const account = yield* userWithPassword
        const code = yield* newCode
        const denial = yield* submitApproval({ email: account.user.email, password, user_code: code.user_code, action: "deny" })
        expect(denial.status).toBe(200)
        expect(denial.body).toContain("Device denied")
        expectOAuthError(yield* poll(code.device_code), "access_denied")
        expect(yield* deviceRow(code.device_code)).toMatchObject({ status: "denied", userId: account.user.id })
      }))

    it.effect("answers expired_token once the code has expired, even if approved", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const account = yield* userWithPassword
        const pending = yield* newCode
        const approved = yield* newCode
        const approval = yield* submitApproval({ email: account.user.email, password, user_code: approved.user_code, action: "approve" })
        expect(approval.status).toBe(200)
        yield* sql`UPDATE device_authorizations SET expires_at = now() - interval '1 second'
          WHERE device_code_hash IN (${hashSecret(pending.device_code)}, ${hashSecret(approved.device_code)})`
        expectOAuthError(yield* poll(pending.device_code), "expired_token")
        expectOAuthError(yield* poll(approved.device_code), "expired_token")
      }))

    it.effect("answers invalid_grant for an unknown device code and for another client's", () =>
      Effect.gen(function*() {
        const code = yield* newCode
        expectOAuthError(yield* poll("pld_unknown"), "invalid_grant")
        expectOAuthError(yield* poll(code.device_code, "another-client"), "invalid_grant")
        // Another client's poll is not the device's: its next poll is not too soon.
        expectOAuthError(yield* poll(code.device_code), "authorization_pending")
      }))

    it.effect("refuses missing parameters with invalid_request and unknown grant types with unsupported_grant_type", () =>
      Effect.gen(function*() {
        const token = (params: Record<string, string>) => postForm("/v1/auth/token", params)
        expectOAuthError(yield* token({ device_code: "pld_x", client_id: clientId }), "invalid_request")
        const noDeviceCode = yield* token({ grant_type: deviceCodeGrant, client_id: clientId, device_code: "" })
        expectOAuthError(noDeviceCode, "invalid_request")
        expect(noDeviceCode.body.error_description).toContain("device_code")
        expectOAuthError(yield* token({ grant_type: deviceCodeGrant, device_code: "pld_x" }), "invalid_request")
        expectOAuthError(yield* token({ grant_type: "refresh_token", client_id: clientId }), "invalid_request")
        expectOAuthError(yield* postForm("/v1/auth/token", "grant_type=refresh_token&grant_type=password"), "invalid_request")
        expectOAuthError(yield* token({ grant_type: "password", username: "a", password: "b" }), "unsupported_grant_type")
        expectOAuthError(
          yield* raw({ method: "POST", path: "/v1/auth/token", json: { grant_type: "client_credentials" } }),
          "unsupported_grant_type"
        )
        expectOAuthError(
          yield* raw({
            method: "POST",
            path: "/v1/auth/token",
            headers: { "content-type": "text/plain" },
            body: `grant_type=${deviceCodeGrant}`
          }),
          "invalid_request"
        )
      }))
  })

  describe("refresh", () => {
    it.effect("rotates the pair; the used refresh token, presented again, ends the whole login", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { tokens } = yield* deviceLogin
        const rotated = yield* refresh(tokens.refresh_token)
        expect(rotated.status).toBe(200)
        expectNoStore(rotated)
        expect(rotated.body.token_type).toBe("Bearer")
        expect(rotated.body.expires_in).toBe(3600)
        expect(rotated.body.access_token).not.toBe(tokens.access_token)
        expect(rotated.body.refresh_token).not.toBe(tokens.refresh_token)
        expect((yield* listOrganizations(rotated.body.access_token)).status).toBe(200)
        const [old] = yield* sql<{ rotated: boolean }>`SELECT rotated_at IS NOT NULL AS rotated FROM refresh_tokens
          WHERE token_hash = ${hashSecret(tokens.refresh_token)}`
        expect(old.rotated).toBe(true)

        // The successor works, once.
        const next = yield* refresh(rotated.body.refresh_token)
        expect(next.status).toBe(200)
        expect((yield* listOrganizations(next.body.access_token)).status).toBe(200)

        const reused = yield* refresh(tokens.refresh_token)
        expectOAuthError(reused, "invalid_grant")
        expect(reused.body.error_description).toContain("login has been ended")
        const afterReuse = yield* listOrganizations(next.body.access_token)
        expect(afterReuse.status).toBe(401)
        expect(afterReuse.body._tag).toBe("Unauthorized")
        expectOAuthError(yield* refresh(next.body.refresh_token), "invalid_grant")
        const [{ count }] = yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM refresh_tokens r
          WHERE r.token_hash IN (${hashSecret(tokens.refresh_token)}, ${hashSecret(next.body.refresh_token)})`
        expect(count).toBe(0)
      }))

    it.effect("a used refresh token presented again ends the login whatever the client_id", () =>
      Effect.gen(function*() {
        const { tokens } = yield* deviceLogin
        const rotated = yield* refresh(tokens.refresh_token)
        expect(rotated.status).toBe(200)
        const reused = yield* refresh(tokens.refresh_token, "another-client")
        expectOAuthError(reused, "invalid_grant")
        expect(reused.body.error_description).toContain("login has been ended")
        expect((yield* listOrganizations(rotated.body.access_token)).status).toBe(401)
        expectOAuthError(yield* refresh(rotated.body.refresh_token), "invalid_grant")
      }))

    it.effect("answers invalid_grant for another client's, an expired and an unknown refresh token, and keeps the login", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { tokens } = yield* deviceLogin
        expectOAuthError(yield* refresh(tokens.refresh_token, "another-client"), "invalid_grant")
        expectOAuthError(yield* refresh("plr_unknown"), "invalid_grant")
        yield* sql`UPDATE refresh_tokens SET expires_at = now() - interval '1 second'
          WHERE token_hash = ${hashSecret(tokens.refresh_token)}`
        const expired = yield* refresh(tokens.refresh_token)
        expectOAuthError(expired, "invalid_grant")
        expect(expired.body.error_description).toContain("expired")
        expect((yield* listOrganizations(tokens.access_token)).status).toBe(200)
      }))
  })

  it.effect("an expired access token gets 401", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { tokens } = yield* deviceLogin
      expect((yield* listOrganizations(tokens.access_token)).status).toBe(200)
      yield* sql`UPDATE access_tokens SET expires_at = now() - interval '1 second'
        WHERE token_hash = ${hashSecret(tokens.access_token)}`
      const response = yield* listOrganizations(tokens.access_token)
      expect(response.status).toBe(401)
      expect(response.body).toEqual({ _tag: "Unauthorized", message: expect.stringContaining("expired") })
    }))

  describe("revocation", () => {
    it.effect("an access or a refresh token ends its whole login; unknown tokens answer 200 too", () =>
      Effect.gen(function*() {
        const byAccess = yield* deviceLogin
        const revoked = yield* revoke(byAccess.tokens.access_token)
        expect(revoked.status).toBe(200)
        expect(revoked.body).toBe("")
        expectNoStore(revoked)
        expect((yield* listOrganizations(byAccess.tokens.access_token)).status).toBe(401)
        expectOAuthError(yield* refresh(byAccess.tokens.refresh_token), "invalid_grant")

        const byRefresh = yield* deviceLogin
        const viaJson = yield* raw({
          method: "POST",
          path: "/v1/auth/revoke",
          json: { token: byRefresh.tokens.refresh_token, token_type_hint: "refresh_token", client_id: clientId }
        })
        expect(viaJson.status).toBe(200)
        expect((yield* listOrganizations(byRefresh.tokens.access_token)).status).toBe(401)
        expectOAuthError(yield* refresh(byRefresh.tokens.refresh_token), "invalid_grant")

        expect((yield* revoke("plt_unknown")).status).toBe(200)
        expect((yield* revoke(byAccess.tokens.access_token)).status).toBe(200)
      }))

    it.effect("ends one login only, and deletes a personal access token", () =>
      Effect.gen(function*() {
        const first = yield* deviceLogin
        const code = yield* newCode
        const approval = yield* submitApproval({
          email: first.account.user.email,
          password,
          user_code: code.user_code,
          action: "approve"
        })
        expect(approval.status).toBe(200)
        const second = (yield* poll(code.device_code)).body
        expect((yield* revoke(first.tokens.access_token)).status).toBe(200)
        expect((yield* listOrganizations(second.access_token)).status).toBe(200)
        expect((yield* listOrganizations(first.account.token)).status).toBe(200)

        expect((yield* revoke(first.account.token)).status).toBe(200)
        expect((yield* listOrganizations(first.account.token)).status).toBe(401)
        expect((yield* listOrganizations(second.access_token)).status).toBe(200)
      }))

    it.effect("refuses API keys with unsupported_token_type and a missing token with invalid_request", () =>
      Effect.gen(function*() {
        const admin = yield* signUp()
        const organization = yield* admin.client.organizations.createOrganization({ payload: { name: "Acme" } })
        const created = yield* raw({
          method: "POST",
          path: `/v1/organizations/${organization.id}/api-keys`,
          token: admin.token,
          json: { name: "CI key" }
        })
        expect(created.status).toBe(201)
        expectOAuthError(yield* revoke(created.body.key), "unsupported_token_type")
        const stillWorks = yield* raw({ method: "GET", path: `/v1/organizations/${organization.id}`, token: created.body.key })
        expect(stillWorks.status).toBe(200)
        expectOAuthError(yield* postForm("/v1/auth/revoke", { token_type_hint: "access_token" }), "invalid_request")
        expectOAuthError(yield* raw({ method: "POST", path: "/v1/auth/revoke", body: "token=x" }), "invalid_request")
      }))
  })

  it.effect("stores every secret only as its hash", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { code, tokens } = yield* deviceLogin
      const rotated = (yield* refresh(tokens.refresh_token)).body
      const secrets = [code.device_code, tokens.access_token, tokens.refresh_token, rotated.access_token, rotated.refresh_token]
      const [{ stored }] = yield* sql<{ stored: string }>`SELECT concat_ws(' ',
          (SELECT string_agg(row_to_json(t)::text, ' ') FROM access_tokens t),
          (SELECT string_agg(row_to_json(t)::text, ' ') FROM refresh_tokens t),
          (SELECT string_agg(row_to_json(t)::text, ' ') FROM device_authorizations t),
          (SELECT string_agg(row_to_json(t)::text, ' ') FROM logins t)) AS stored`
      for (const secret of secrets) {
        expect(stored).not.toContain(secret)
        expect(stored).not.toContain(secret.slice(4))
        expect(stored).toContain(hashSecret(secret))
      }
    }))

  describe("approval page", () => {
    it.effect("GET /device is an HTML form with strict headers, outside the OpenAPI document", () =>
      Effect.gen(function*() {
        const page = yield* raw({ method: "GET", path: "/device" })
        expect(page.status).toBe(200)
        expect(page.contentType).toBe("text/html; charset=utf-8")
        expect(page.headers.get("x-frame-options")).toBe("DENY")
        expect(page.headers.get("cache-control")).toBe("no-store")
        const csp = page.headers.get("content-security-policy") ?? ""
        expect(csp).toContain("default-src 'none'")
        expect(csp).toContain("frame-ancestors 'none'")
        expect(csp).toContain("form-action 'self'")
        expect(csp).not.toContain("unsafe-inline")
        // The one inline stylesheet is the one the policy allows.
        const stylesheet = /<style>([^<]*)<\/style>/.exec(page.body)?.[1] ?? ""
        expect(csp).toContain(`style-src 'sha256-${createHash("sha256").update(stylesheet).digest("base64")}'`)
        expect(page.body).toContain(`<form method="post" action="/device">`)
        for (const name of ["email", "password", "user_code"]) expect(page.body).toContain(`name="${name}"`)
        expect(page.body).toContain(`name="action" value="approve"`)
        expect(page.body).toContain(`name="action" value="deny"`)
        expect(page.body).not.toMatch(/<script|src=/)
        // The page links to nothing but its icon.
        expect(Array.from(page.body.matchAll(/href="([^"]*)"/g), ([, href]) => href)).toEqual(["/favicon.svg"])

        const document = yield* raw({ method: "GET", path: "/openapi.json" })
        expect(Object.keys(document.body.paths)).toContain("/v1/auth/token")
        expect(Object.keys(document.body.paths)).not.toContain("/device")
      }))

    it.effect("with the code of a pending login prefilled, names the client and scope asking, escaped; otherwise nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const attacker = `<script>alert(1)</script>`
        const asking = yield* requestCode({ client_id: attacker, scope: "posts:write <b>" })
        expect(asking.status).toBe(200)
        const code = asking.body as { device_code: string; user_code: string }
        const page = yield* raw({ method: "GET", path: `/device?user_code=${code.user_code}` })
        expect(page.status).toBe(200)
        expect(page.body).not.toContain("<script>")
        expect(page.body).toContain(`<p class="client">The program calls itself <strong>&lt;script&gt;alert(1)&lt;/script&gt;</strong>`)
        expect(page.body).toContain("<strong>posts:write &lt;b&gt;</strong>")
        expect(page.body).not.toContain("<b>")
        // As typed by people: lower case, without the dash.
        const typed = yield* raw({ method: "GET", path: `/device?user_code=${code.user_code.replace("-", "").toLowerCase()}` })
        expect(typed.body).toContain(`<p class="client">`)

        const withoutScope = yield* newCode
        const plain = yield* raw({ method: "GET", path: `/device?user_code=${withoutScope.user_code}` })
        expect(plain.body).toContain(`<p class="client">The program calls itself <strong>${clientId}</strong>.</p>`)

        const notShown = [
          yield* raw({ method: "GET", path: "/device" }),
          yield* raw({ method: "GET", path: "/device?user_code=BCDF-GHJK" }),
          yield* raw({ method: "GET", path: "/device?user_code=not-a-code" })
        ]
        yield* sql`UPDATE device_authorizations SET expires_at = now() - interval '1 second'
          WHERE device_code_hash = ${hashSecret(withoutScope.device_code)}`
        notShown.push(yield* raw({ method: "GET", path: `/device?user_code=${withoutScope.user_code}` }))
        for (const response of notShown) {
          expect(response.status).toBe(200)
          expect(response.body).not.toContain(`class="client"`)
          expect(response.body).not.toContain(clientId)
        }
      }))

    it.effect("escapes the user_code it prefills", () =>
      Effect.gen(function*() {
        const attack = `"><script>alert('x')</script><b a='`
        const page = yield* raw({ method: "GET", path: `/device?user_code=${encodeURIComponent(attack)}` })
        expect(page.status).toBe(200)
        expect(page.body).not.toContain("<script>")
        expect(page.body).not.toContain("<b a=")
        expect(page.body).toContain(`value="&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&lt;b a=&#39;"`)
      }))
  })
})

/** The HTML answer to a refused approval: its status, and the error it shows. */
const expectRefusal = (response: RawResponse, status: number, error: string) => {
  expect(response.status).toBe(status)
  expect(response.contentType).toBe("text/html; charset=utf-8")
  expect(response.headers.get("x-frame-options")).toBe("DENY")
  expect(response.body).toContain(`<p class="error" role="alert">${error}`)
}

// Refusals count against this address's rate limit: these tests get a server of their own, and stay under 5.
layer(TestServer, { excludeTestServices: true })("device approval refusals", (it) => {
  it.effect("wrong credentials leave the request pending; the form keeps the email, never the password", () =>
    Effect.gen(function*() {
      const account = yield* userWithPassword
      const code = yield* newCode
      const wrong = yield* submitApproval({ email: account.user.email, password: "wrong password!", user_code: code.user_code, action: "deny" })
      expectRefusal(wrong, 403, "Wrong email or password.")
      expect(wrong.body).toContain(`value="${account.user.email}"`)
      expect(wrong.body).not.toContain("wrong password!")
      const unknownEmail = yield* submitApproval({ email: "nobody@example.com", password, user_code: code.user_code, action: "approve" })
      expectRefusal(unknownEmail, 403, "Wrong email or password.")
      expectOAuthError(yield* poll(code.device_code), "authorization_pending")
    }))

  it.effect("an unknown or expired code is refused", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const account = yield* userWithPassword
      const unknown = yield* submitApproval({ email: account.user.email, password, user_code: "BCDF-GHJK", action: "approve" })
      expectRefusal(unknown, 400, "No login is waiting for this code")
      const code = yield* newCode
      yield* sql`UPDATE device_authorizations SET expires_at = now() - interval '1 second'
        WHERE device_code_hash = ${hashSecret(code.device_code)}`
      const expired = yield* submitApproval({ email: account.user.email, password, user_code: code.user_code, action: "approve" })
      expectRefusal(expired, 400, "This code has expired")
      expect((yield* deviceRow(code.device_code)).status).toBe("pending")
    }))

  it.effect("incomplete or malformed forms are refused without a check", () =>
    Effect.gen(function*() {
      const account = yield* userWithPassword
      const fields = { email: account.user.email, password, user_code: "BCDF-GHJK", action: "approve" }
      expectRefusal(yield* submitApproval({ ...fields, password: "" }), 400, "Enter your email, your password and the code")
      expectRefusal(yield* submitApproval({ ...fields, user_code: "AEIO-U123" }), 400, "That is not a code")
      expectRefusal(yield* submitApproval({ ...fields, action: "maybe" }), 400, "Choose Approve or Deny.")
      expectRefusal(yield* raw({ method: "POST", path: "/device", json: fields }), 415, "Send the form from this page.")
    }))
})

layer(TestServer, { excludeTestServices: true })("device approval rate limit", (it) => {
  it.effect("after 5 failures an address gets 429 for 3 minutes, even with the right credentials; successes do not count", () =>
    Effect.gen(function*() {
      const account = yield* userWithPassword
      const code = yield* newCode
      const attempt = (overrides: Partial<{ password: string; user_code: string }>) =>
        submitApproval({ email: account.user.email, password, user_code: code.user_code, action: "approve", ...overrides })
      for (let i = 0; i < 4; i++) expectRefusal(yield* attempt({ password: `wrong ${i}` }), 403, "Wrong email or password.")
      const other = yield* newCode
      const success = yield* attempt({ user_code: other.user_code })
      expect(success.status).toBe(200)
      expectRefusal(yield* attempt({ user_code: "BCDF-GHJK" }), 400, "No login is waiting for this code")
      const limited = yield* attempt({})
      expectRefusal(limited, 429, "Too many failed attempts")
      expect(limited.headers.get("retry-after")).toBe("180")
      expectOAuthError(yield* poll(code.device_code), "authorization_pending")
    }))
})

// The test server's requests all come from one address: the limiter's keys are tested on the service itself, a
// fresh one in each test, with the test clock. (A layer of its own: `layer` rebinds `it.effect` for the file.)
layer(Layer.empty)("approval rate limit, per address and per email", (unit) => {
  type Who = { address: string; email: string }
  const fail = (limit: ApprovalRateLimit, who: Who) => limit.guard(who, Effect.succeed(false), identity)
  const failTimes = (limit: ApprovalRateLimit, times: number, key: (i: number) => Who) =>
    Effect.forEach(Array.from({ length: times }, (_, i) => i), (i) => fail(limit, key(i)), { discard: true })

  // A successful attempt: it runs when the limits allow it, and counts against neither.
  const allowed = (limit: ApprovalRateLimit, who: Who) =>
    Effect.map(Effect.either(limit.guard(who, Effect.succeed(true), identity)), Either.isRight)

  unit.effect("5 failures for one email from different addresses lock that email, in any case, for 3 minutes", () =>
    Effect.gen(function*() {
      const limit = yield* ApprovalRateLimit
      yield* failTimes(limit, 5, (i) => ({ address: `10.0.0.${i}`, email: i % 2 === 0 ? "Victim@Example.com" : "victim@example.com" }))
      const locked = yield* Effect.either(limit.guard({ address: "10.0.1.1", email: "VICTIM@example.COM" }, Effect.void, () => true))
      expect(locked._tag).toBe("Left")
      if (locked._tag === "Left") expect(locked.left).toMatchObject({ _tag: "RateLimited", retryAfterSeconds: 180 })
      // The new addresses are not locked for other emails, nor other emails by them.
      expect(yield* allowed(limit, { address: "10.0.1.1", email: "someone@example.com" })).toBe(true)
      expect(yield* allowed(limit, { address: "10.0.0.1", email: "someone-else@example.com" })).toBe(true)
      yield* TestClock.adjust(Duration.seconds(179))
      expect(yield* allowed(limit, { address: "10.0.1.2", email: "victim@example.com" })).toBe(false)
      yield* TestClock.adjust(Duration.seconds(1))
      expect(yield* allowed(limit, { address: "10.0.1.2", email: "victim@example.com" })).toBe(true)
      // One failure has come back, and one is all it allows.
      yield* fail(limit, { address: "10.0.1.3", email: "victim@example.com" })
      expect(yield* allowed(limit, { address: "10.0.1.4", email: "victim@example.com" })).toBe(false)
    }).pipe(Effect.provide(ApprovalRateLimit.Default)))

  unit.effect("5 failures from one address lock that address, whatever the email", () =>
    Effect.gen(function*() {
      const limit = yield* ApprovalRateLimit
      yield* failTimes(limit, 4, (i) => ({ address: "10.0.0.1", email: `user${i}@example.com` }))
      expect(yield* allowed(limit, { address: "10.0.0.1", email: "fresh@example.com" })).toBe(true)
      yield* fail(limit, { address: "10.0.0.1", email: "user4@example.com" })
      expect(yield* allowed(limit, { address: "10.0.0.1", email: "fresh@example.com" })).toBe(false)
      expect(yield* allowed(limit, { address: "10.0.0.2", email: "user0@example.com" })).toBe(true)
    }).pipe(Effect.provide(ApprovalRateLimit.Default)))

  unit.effect("a success counts against neither the address nor the email", () =>
    Effect.gen(function*() {
      const limit = yield* ApprovalRateLimit
      for (let i = 0; i < 10; i++) expect(yield* allowed(limit, { address: `10.0.0.${i}`, email: "user@example.com" })).toBe(true)
      yield* failTimes(limit, 4, (i) => ({ address: `10.0.1.${i}`, email: "user@example.com" }))
      expect(yield* allowed(limit, { address: "10.0.2.1", email: "user@example.com" })).toBe(true)
      yield* fail(limit, { address: "10.0.2.1", email: "user@example.com" })
      expect(yield* allowed(limit, { address: "10.0.2.2", email: "user@example.com" })).toBe(false)
    }).pipe(Effect.provide(ApprovalRateLimit.Default)))

  unit.effect("of many failing attempts sent at once, only as many as the limit allows check a password", () =>
    Effect.gen(function*() {
      const limit = yield* ApprovalRateLimit
      let checked = 0
      const attempt = (i: number) =>
        Effect.either(limit.guard({ address: "10.0.4.1", email: `user${i}@example.com` }, Effect.sync(() => ++checked < 0), identity))
      const outcomes = yield* Effect.forEach(Array.from({ length: 50 }, (_, i) => i), attempt, { concurrency: "unbounded" })
      expect(checked).toBe(5)
      expect(outcomes.filter(Either.isLeft)).toHaveLength(45)
    }).pipe(Effect.provide(ApprovalRateLimit.Default)))

  unit.effect("password checks run at most PASSWORD_CHECK_CONCURRENCY at a time, in the order they came", () =>
    Effect.gen(function*() {
      const limit = yield* ApprovalRateLimit
      let running = 0
      let most = 0
      const order: Array<number> = []
      const check = (i: number) =>
        limit.guard({ address: `10.0.3.${i}`, email: `user${i}@example.com` }, Effect.gen(function*() {
          running++
          most = Math.max(most, running)
          order.push(i)
          for (let turn = 0; turn < 5; turn++) yield* Effect.yieldNow()
          running--
          return true
        }), identity)
      yield* Effect.forEach(Array.from({ length: 20 }, (_, i) => i), check, { concurrency: "unbounded", discard: true })
      expect(most).toBe(3)
      expect(order).toEqual(Array.from({ length: 20 }, (_, i) => i))
    }).pipe(
      Effect.provide(ApprovalRateLimit.Default),
      Effect.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["PASSWORD_CHECK_CONCURRENCY", "3"]]))))
    ))
})

/** The approval form, sent from another loopback address (127.0.0.x), as a different client would. */
const submitApprovalFrom = (
  localAddress: string,
  fields: { email: string; password: string; user_code: string; action: string }
) =>
  Effect.flatMap(serverPort, (port) =>
    Effect.async<{ status: number; body: string }>((resume) => {
      const body = new URLSearchParams(fields).toString()
      const request = httpRequest({
        host: "127.0.0.1",
        port,
        localAddress,
        method: "POST",
        path: "/device",
        headers: { "content-type": "application/x-www-form-urlencoded", "content-length": Buffer.byteLength(body) }
      }, (response) => {
        let text = ""
        response.setEncoding("utf8")
        response.on("data", (chunk) => (text += chunk))
        response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, body: text })))
      })
      request.on("error", (error) => resume(Effect.die(error)))
      request.end(body)
    }))

// Linux routes all of 127.0.0.0/8 to loopback; elsewhere (macOS) only 127.0.0.1 may exist, and this test is skipped.
const otherLoopbackAddresses = await new Promise<boolean>((resolve) => {
  const probe = createServer()
  probe.once("error", () => resolve(false))
  probe.listen(0, "127.0.0.2", () => probe.close(() => resolve(true)))
})

layer(TestServer, { excludeTestServices: true })("device approval rate limit per email", (it) => {
  it.effect.skipIf(!otherLoopbackAddresses)(
    "5 failures for one email from different addresses lock its approvals, with the same words for unknown emails",
    () =>
      Effect.gen(function*() {
        const victim = yield* userWithPassword
        const bystander = yield* userWithPassword
        const code = yield* newCode
        const fields = { email: victim.user.email, password, user_code: code.user_code, action: "approve" }
        for (let i = 0; i < 5; i++) {
          const email = i % 2 === 0 ? victim.user.email.toUpperCase() : victim.user.email
          const wrong = yield* submitApprovalFrom(`127.0.0.${10 + i}`, { ...fields, email, password: `wrong ${i}` })
          expect(wrong.status).toBe(403)
        }
        const limited = yield* submitApprovalFrom("127.0.0.20", fields)
        expect(limited.status).toBe(429)
        expect(limited.body).toContain(`<p class="error" role="alert">Too many failed attempts`)
        expectOAuthError(yield* poll(code.device_code), "authorization_pending")
        // The address is not locked for another email.
        const other = yield* newCode
        const approved = yield* submitApprovalFrom("127.0.0.20", {
          ...fields,
          email: bystander.user.email,
          user_code: other.user_code
        })
        expect(approved.status).toBe(200)

        // An email no user has is limited alike, and its page reads the same.
        const nobody = { ...fields, email: "nobody@example.com" }
        for (let i = 0; i < 5; i++) expect((yield* submitApprovalFrom(`127.0.0.${30 + i}`, nobody)).status).toBe(403)
        const unknownLimited = yield* submitApprovalFrom("127.0.0.40", nobody)
        expect(unknownLimited.status).toBe(429)
        const errorOf = (html: string) => /<p class="error" role="alert">([^<]*)<\/p>/.exec(html)?.[1]
        expect(errorOf(unknownLimited.body)).toBe(errorOf(limited.body))
      })
  )
})

// What the server logs, as text: the access log included.
const logged: Array<string> = []
const capturingLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ annotations, message }) => {
    logged.push(JSON.stringify({ message, annotations: Object.fromEntries(HashMap.toEntries(annotations)) }))
  })
)

const PublicServer = makeHttpLive({ accessLog: true }).pipe(
  Layer.provideMerge(InProcessHttpServer),
  Layer.provideMerge(UsersRepo.Default),
  Layer.provide(SchedulerLive.pipe(Layer.provide(Layer.succeed(SoleProcess, true)))),
  Layer.provide(LocalOAuthNetworks),
  Layer.provide([LocalProviders, TestCipher, freshTestStorage("filesystem")]),
  Layer.provideMerge(TestDatabase),
  Layer.provide(capturingLogger),
  Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["PUBLIC_URL", "https://postline.example/"]]))))
)

layer(PublicServer, { excludeTestServices: true })("device login behind a public URL, with the access log", (it) => {
  it.effect("links to PUBLIC_URL and never logs passwords or codes", () =>
    Effect.gen(function*() {
      const { code, tokens } = yield* deviceLogin
      expect(code.verification_uri_complete).toBe(`https://postline.example/device?user_code=${code.user_code}`)
      const metadata = yield* raw({ method: "GET", path: "/.well-known/oauth-authorization-server" })
      expect(metadata.body).toMatchObject({ issuer: "https://postline.example", token_endpoint: "https://postline.example/v1/auth/token" })
      const page = yield* raw({ method: "GET", path: `/device?user_code=${code.user_code}` })
      expect(page.status).toBe(200)
      const rotated = (yield* refresh(tokens.refresh_token)).body
      expect((yield* revoke(rotated.refresh_token)).status).toBe(200)

      const accessLog = logged.map((line) => JSON.parse(line).annotations).filter((annotations) => "http.url" in annotations)
      expect(accessLog).toContainEqual({ "http.method": "GET", "http.url": "/device", "http.status": 200 })
      expect(accessLog).toContainEqual({ "http.method": "POST", "http.url": "/device", "http.status": 200 })
      expect(accessLog).toContainEqual({ "http.method": "POST", "http.url": "/v1/auth/token", "http.status": 200 })
      const log = logged.join("\n")
      for (const secret of [password, code.user_code, code.user_code.replace("-", ""), code.device_code, tokens.refresh_token]) {
        expect(log).not.toContain(secret)
      }
    }))
})
