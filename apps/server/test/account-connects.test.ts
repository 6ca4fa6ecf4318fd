import { describe, expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Logger, LogLevel } from "effect"
import { consentAtMastodon, makeMastodonFake, type MastodonFake } from "./support/MastodonFake.js"
import { publishingTeam } from "./support/Publishing.js"
import { sendRaw } from "./support/RawSocket.js"
import { GuardedOAuthNetworks, GuardedProviders } from "./support/Providers.js"
import { makeTestServer, raw, signUp } from "./support/TestServer.js"
import { freshTestStorage } from "./support/TestStorage.js"

/** The browser following the network's redirect back to Postline. */
const followBack = (location: string) =>
  Effect.promise(async () => {
    const response = await fetch(location, { redirect: "manual" })
    return { status: response.status, headers: response.headers, text: await response.text() }
  })

const startAt = (team: Effect.Effect.Success<ReturnType<typeof publishingTeam>>, mastodon: MastodonFake, extra: object = {}) =>
  team.call("POST", "/social-accounts/connect", { provider: "mastodon", instanceUrl: mastodon.url, ...extra })

const expireConnect = (connectId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`UPDATE account_connects SET expires_at = now() - interval '1 second' WHERE id = ${connectId}`)

layer(makeTestServer(Logger.minimumLogLevel(LogLevel.Error)), { excludeTestServices: true })("connecting accounts by signing in", (it) => {
  describe("Mastodon", () => {
    it.scoped("connects from POST …/connect to a published post: the app registered once, the token kept encrypted and used", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const team = yield* publishingTeam(10)
        const started = yield* startAt(team, mastodon)
        expect(started.status, JSON.stringify(started.body)).toBe(201)
        expect(Object.keys(started.body).sort()).toEqual(["authorizationUrl", "connectId", "expiresAt"])
        const authorization = new URL(started.body.authorizationUrl)
        expect(authorization.origin + authorization.pathname).toBe(`${mastodon.url}/oauth/authorize`)
        expect(authorization.searchParams.get("code_challenge_method")).toBe("S256")
        expect(authorization.searchParams.get("scope")).toBe("read write:statuses write:media")
        expect(new URL(authorization.searchParams.get("redirect_uri")!).pathname).toBe("/v1/oauth/callback/mastodon")
        const lifetime = Date.parse(started.body.expiresAt) - Date.now()
        expect(lifetime).toBeGreaterThan(8 * 60_000)
        expect(lifetime).toBeLessThanOrEqual(10 * 60_000)
        expect(mastodon.apps).toHaveLength(1)

        const waiting = yield* team.call("GET", `/social-accounts/connect/${started.body.connectId}`)
        expect(waiting.body).toMatchObject({ status: "pending", account: null, error: null, provider: "mastodon" })

        const back = yield* followBack(yield* consentAtMastodon(started.body.authorizationUrl, "approve"))
        expect(back.status, back.text).toBe(200)
        expect(back.headers.get("content-type")).toBe("text/html; charset=utf-8")
        expect(back.headers.get("content-security-policy")).toContain("default-src 'none'")
        expect(back.text).toContain("@alice@mastodon.test")

        const done = yield* team.call("GET", `/social-accounts/connect/${started.body.connectId}`)
        expect(done.body).toMatchObject({ status: "connected", error: null, account: { provider: "mastodon", handle: "@alice@mastodon.test", status: "connected" } })
        const accountId = done.body.account.id as string

        // The token is kept only encrypted, and is what the post goes out with.
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ credentials: string }>`SELECT credentials FROM social_accounts WHERE id = ${accountId}`
        const [issued] = mastodon.issuedTokens()
        expect(row.credentials).not.toContain(issued.accessToken)
        const post = yield* team.draft("Hello by signing in")
        const sent = yield* team.postNow(post.id, [accountId])
        expect(sent.status, JSON.stringify(sent.body)).toBe(200)
        expect(mastodon.statuses.map((status) => status.text)).toEqual(["Hello by signing in"])
        const statusCall = mastodon.requests.find((request) => request.method === "POST" && request.path === "/api/v1/statuses")
        expect(statusCall?.headers.authorization).toBe(`Bearer ${issued.accessToken}`)
      }))

    it.scoped("connecting the same user again updates their account, on the app registered before", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const team = yield* publishingTeam(10)
        const connectOnce = Effect.gen(function*() {
          const started = yield* startAt(team, mastodon)
          yield* followBack(yield* consentAtMastodon(started.body.authorizationUrl, "approve"))
          return (yield* team.call("GET", `/social-accounts/connect/${started.body.connectId}`)).body.account.id as string
        })
        const first = yield* connectOnce
        const second = yield* connectOnce
        expect(second).toBe(first)
        const accounts = yield* team.call("GET", "/social-accounts")
        expect(accounts.body.data).toHaveLength(1)
        expect(mastodon.apps).toHaveLength(1)
        // The account uses the newest token.
        const tokens = mastodon.issuedTokens()
        expect(tokens).toHaveLength(2)
        const post = yield* team.draft("With the newest token")
        yield* team.postNow(post.id, [first])
        const statusCall = mastodon.requests.find((request) => request.method === "POST" && request.path === "/api/v1/statuses")
        expect(statusCall?.headers.authorization).toBe(`Bearer ${tokens[1].accessToken}`)
      }))

    it.scoped("an account pasted before network users were recorded is found by its handle: signing in updates it", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const team = yield* publishingTeam()
        const pasted = yield* team.connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE social_accounts SET network_user_id = NULL WHERE id = ${pasted.id}`
        const started = yield* startAt(team, mastodon)
        yield* followBack(yield* consentAtMastodon(started.body.authorizationUrl, "approve"))
        const { account } = (yield* team.call("GET", `/social-accounts/connect/${started.body.connectId}`)).body
        expect(account.id).toBe(pasted.id)
        expect((yield* team.call("GET", "/social-accounts")).body.data).toHaveLength(1)
      }))

    it.scoped("a server without PUBLIC_URL signs in only when reached at this machine's address, not at a Host a caller names", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const team = yield* publishingTeam()
        // fetch would send the address it calls as the Host: the request is written as a client may write it.
        const server = yield* HttpServer.HttpServer
        const body = JSON.stringify({ provider: "mastodon", instanceUrl: mastodon.url })
        const elsewhere = yield* Effect.promise(() =>
          sendRaw((server.address as HttpServer.TcpAddress).port, [[
            `POST /v1/teams/${team.team.id}/social-accounts/connect HTTP/1.1`,
            "Host: postline.invalid",
            `Authorization: Bearer ${team.admin.token}`,
            "Content-Type: application/json",
            `Content-Length: ${Buffer.byteLength(body)}`,
            "Connection: close",
            "",
            body
          ].join("\r\n")]))
        expect(elsewhere.status).toBe(409)
        expect(elsewhere.body).toMatchObject({ _tag: "Conflict", reason: "provider_not_configured" })
        expect(elsewhere.body.message).toContain("PUBLIC_URL")
        expect(mastodon.apps).toHaveLength(0)
      }))

    it.scoped("a state works once; an expired one, an unknown one and one sent back to another network's callback are refused", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const team = yield* publishingTeam()
        const started = yield* startAt(team, mastodon)
        const location = yield* consentAtMastodon(started.body.authorizationUrl, "approve")
        const elsewhere = location.replace("/v1/oauth/callback/mastodon", "/v1/oauth/callback/x")
        const wrongNetwork = yield* followBack(elsewhere)
        expect(wrongNetwork.status).toBe(400)
        expect(wrongNetwork.text).toContain("not one of a connect")
        expect((yield* followBack(location)).status).toBe(200)
        const again = yield* followBack(location)
        expect(again.status).toBe(400)
        expect(again.text).toContain("used already")
        expect((yield* team.call("GET", "/social-accounts")).body.data).toHaveLength(1)

        const unknown = yield* followBack(location.replace(/state=[^&]+/, "state=forged"))
        expect(unknown.status).toBe(400)
        expect(unknown.text).toContain("not one of a connect")
        const stateless = yield* followBack(location.replace(/[?&]state=[^&]+/, ""))
        expect(stateless.status).toBe(400)

        const late = yield* startAt(team, mastodon)
        const lateLocation = yield* consentAtMastodon(late.body.authorizationUrl, "approve")
        yield* expireConnect(late.body.connectId)
        const expired = yield* followBack(lateLocation)
        expect(expired.status).toBe(400)
        expect(expired.text).toContain("expired")
        expect((yield* team.call("GET", `/social-accounts/connect/${late.body.connectId}`)).body).toMatchObject({ status: "expired", account: null })
        expect((yield* team.call("GET", "/social-accounts")).body.data).toHaveLength(1)
      }))

    it.scoped("the same callback arriving four times at once connects one account, once; the others are told the link was used", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const team = yield* publishingTeam()
        const started = yield* startAt(team, mastodon)
        const location = yield* consentAtMastodon(started.body.authorizationUrl, "approve")
        const answers = yield* Effect.all(Array.from({ length: 4 }, () => followBack(location)), { concurrency: "unbounded" })
        expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400, 400, 400])
        for (const refused of answers.filter((answer) => answer.status === 400)) expect(refused.text).toContain("used already")
        expect((yield* team.call("GET", "/social-accounts")).body.data).toHaveLength(1)
        expect(mastodon.issuedTokens()).toHaveLength(1)
        expect((yield* team.call("GET", `/social-accounts/connect/${started.body.connectId}`)).body.status).toBe("connected")
      }))

    it.scoped("a person who denies gets a page saying so, and the connect says failed with why", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const team = yield* publishingTeam()
        const started = yield* startAt(team, mastodon)
        const back = yield* followBack(yield* consentAtMastodon(started.body.authorizationUrl, "deny"))
        expect(back.status).toBe(400)
        expect(back.text).toContain("access_denied")
        const status = yield* team.call("GET", `/social-accounts/connect/${started.body.connectId}`)
        expect(status.body).toMatchObject({ status: "failed", account: null, error: expect.stringContaining("access_denied") })
        expect((yield* team.call("GET", "/social-accounts")).body.data).toHaveLength(0)
      }))

    it.scoped("returnTo: this server's own address or a loopback one gets the browser back with the outcome; any other is refused", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const team = yield* publishingTeam()
        for (const returnTo of ["https://evil.invalid/done", "http://192.0.2.1:8080/done", "https://127.0.0.1:9/done", "http://user:pw@127.0.0.1:9/done"]) {
          const refused = yield* startAt(team, mastodon, { returnTo })
          expect(refused.status, returnTo).toBe(400)
          // An address with a user name or password is no address at all, as everywhere in the API.
          if (returnTo.includes("@")) expect(refused.body._tag).toBe("HttpApiDecodeError")
          else expect(refused.body, returnTo).toMatchObject({ _tag: "BadRequest", reason: "return_to_not_allowed" })
        }
        const started = yield* startAt(team, mastodon, { returnTo: "http://127.0.0.1:4567/connected?from=cli" })
        expect(started.status).toBe(201)
        const back = yield* followBack(yield* consentAtMastodon(started.body.authorizationUrl, "approve"))
        expect(back.status).toBe(303)
        expect((yield* team.call("GET", `/social-accounts/connect/${started.body.connectId}`)).body.status).toBe("connected")
        const to = new URL(back.headers.get("location")!)
        expect(to.origin + to.pathname).toBe("http://127.0.0.1:4567/connected")
        expect(Object.fromEntries(to.searchParams)).toEqual({ from: "cli", connectId: started.body.connectId, status: "connected" })
      }))

    it.scoped("removing the account revokes its token at the instance", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const team = yield* publishingTeam()
        const started = yield* startAt(team, mastodon)
        yield* followBack(yield* consentAtMastodon(started.body.authorizationUrl, "approve"))
        const { account } = (yield* team.call("GET", `/social-accounts/connect/${started.body.connectId}`)).body
        expect(mastodon.issuedTokens()).toEqual([{ accessToken: expect.any(String), revoked: false }])
        const removed = yield* team.call("DELETE", `/social-accounts/${account.id}`)
        expect(removed.status).toBe(200)
        expect(mastodon.issuedTokens()).toEqual([{ accessToken: expect.any(String), revoked: true }])
      }))
  })

  describe("who may connect", () => {
    it.scoped("a member may not start one (403), another organization sees neither the team nor its connects (404)", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const team = yield* publishingTeam()
        const member = yield* signUp("Mia Member")
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${member.user.id}, ${team.organization.id}, 'member')`
        const asMember = yield* raw({ method: "POST", path: `/v1/teams/${team.team.id}/social-accounts/connect`, token: member.token, json: { provider: "mastodon", instanceUrl: mastodon.url } })
        expect(asMember.status).toBe(403)
        expect(asMember.body._tag).toBe("Forbidden")

        const started = yield* startAt(team, mastodon)
        const other = yield* publishingTeam()
        const foreign = yield* raw({ method: "GET", path: `/v1/teams/${team.team.id}/social-accounts/connect/${started.body.connectId}`, token: other.admin.token })
        expect(foreign.status).toBe(404)
        const crossTeam = yield* other.call("GET", `/social-accounts/connect/${started.body.connectId}`)
        expect(crossTeam.status).toBe(404)
        expect(crossTeam.body._tag).toBe("NotFound")
        const asMemberStatus = yield* raw({ method: "GET", path: `/v1/teams/${team.team.id}/social-accounts/connect/${started.body.connectId}`, token: member.token })
        expect(asMemberStatus.status).toBe(403)
      }))

    it.scoped("a starter who lost the right meanwhile connects nothing: the connect fails", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const team = yield* publishingTeam()
        const admin2 = yield* signUp("Second Admin")
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${admin2.user.id}, ${team.organization.id}, 'admin')`
        const started = yield* raw({ method: "POST", path: `/v1/teams/${team.team.id}/social-accounts/connect`, token: admin2.token, json: { provider: "mastodon", instanceUrl: mastodon.url } })
        expect(started.status).toBe(201)
        yield* sql`UPDATE memberships SET role = 'member' WHERE user_id = ${admin2.user.id}`
        const back = yield* followBack(yield* consentAtMastodon(started.body.authorizationUrl, "approve"))
        expect(back.status).toBe(400)
        expect(back.text).toContain("may no longer connect")
        expect((yield* team.call("GET", `/social-accounts/connect/${started.body.connectId}`)).body).toMatchObject({ status: "failed" })
        expect((yield* team.call("GET", "/social-accounts")).body.data).toHaveLength(0)
      }))
  })

  describe("networks this server is not set up for", () => {
    it.scoped("X without X_CLIENT_ID and X_CLIENT_SECRET: 409 naming them, and GET /v1/providers says so", () =>
      Effect.gen(function*() {
        const team = yield* publishingTeam()
        const refused = yield* team.call("POST", "/social-accounts/connect", { provider: "x" })
        expect(refused.status).toBe(409)
        expect(refused.body).toMatchObject({ _tag: "Conflict", reason: "provider_not_configured" })
        expect(refused.body.message).toContain("X_CLIENT_ID and X_CLIENT_SECRET")
        const providers = yield* raw({ method: "GET", path: "/v1/providers", token: team.admin.token })
        const byName = Object.fromEntries((providers.body.data as Array<any>).map((rules) => [rules.provider, rules.connect]))
        expect(byName.x.oauth).toMatchObject({ configured: false, missingSettings: ["X_CLIENT_ID", "X_CLIENT_SECRET"] })
        expect(byName.mastodon.oauth).toEqual({ configured: true, missingSettings: [], scopes: ["read", "write:statuses", "write:media"], refreshes: false })
        expect(byName.webhook.oauth).toBeNull()
      }))
  })
})

layer(makeTestServer(Logger.minimumLogLevel(LogLevel.Error), GuardedProviders, freshTestStorage("filesystem"), GuardedOAuthNetworks), {
  excludeTestServices: true
})("connecting by signing in, behind the outbound guard", (it) => {
  it.scoped("an instance at a private or loopback address is refused before any call, and nothing is kept", () =>
    Effect.gen(function*() {
      const mastodon = yield* makeMastodonFake()
      const team = yield* publishingTeam()
      const refused = yield* startAt(team, mastodon)
      expect(refused.status).toBe(400)
      expect(refused.body).toMatchObject({ _tag: "BadRequest", reason: "credentials_not_verified" })
      expect(refused.body.message).toContain("OUTBOUND_ALLOW_PRIVATE")
      expect(mastodon.requests).toEqual([])
      const sql = yield* SqlClient.SqlClient
      expect(yield* sql`SELECT 1 FROM account_connects UNION ALL SELECT 1 FROM oauth_clients`).toEqual([])
    }))
})
