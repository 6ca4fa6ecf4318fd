import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Logger, LogLevel, Schema } from "effect"
import { CredentialsCipher, unknownKeyMessage } from "../src/Secrets/CredentialsCipher.js"
import { credentialsFromJson } from "../src/Providers/Credentials.js"
import { CredentialsKeysCheckLive } from "../src/SocialAccounts/CredentialsKeysCheck.js"
import { SocialAccountsRepo } from "../src/SocialAccounts/Repo.js"
import { BlueskyNetwork } from "./support/BlueskyNetwork.js"
import { makeLocalServer } from "./support/LocalServer.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { GuardedProviders } from "./support/Providers.js"
import { publishingTeam } from "./support/Publishing.js"
import { makeTestServer, raw, signUp, TestCipher } from "./support/TestServer.js"

const accountFields = [
  "avatarUrl",
  "createdAt",
  "displayName",
  "handle",
  "id",
  "lastError",
  "profileUrl",
  "provider",
  "status",
  "teamId",
  "updatedAt"
]

/** Every line the server logs, to search for secrets. */
const logged: Array<string> = []
const capturingLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ annotations, cause, message }) => logged.push(JSON.stringify({ message, annotations, cause })))
)

/** An admin's team, a plain member of it, and how to reach its accounts. */
const adminsTeam = Effect.gen(function*() {
  const admin = yield* signUp("Ada Admin")
  const organization = yield* admin.client.organizations.createOrganization({ payload: { name: "Acme" } })
  const team = yield* admin.client.teams.createTeam({ payload: { organizationId: organization.id, name: "Social" } })
  const member = yield* signUp("Mia Member")
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${member.user.id}, ${organization.id}, 'member')`
  const path = (suffix = "") => `/v1/teams/${team.id}/social-accounts${suffix}`
  const connect = (json: unknown, token = admin.token) => raw({ method: "POST", path: path(), token, json })
  return { admin, member, team, path, connect }
})

/** A receiver of webhook calls on this machine. */
const webhookReceiver = makeLocalServer((_request, response) => response.writeHead(204).end())

const rowsOf = (teamId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT * FROM social_accounts WHERE team_id = ${teamId}`)

layer(Layer.merge(makeTestServer(capturingLogger), BlueskyNetwork.layer()), { excludeTestServices: true })(
  "social accounts",
  (it) => {
    it.scoped("connects a Bluesky account on the PDS, a Mastodon account and a webhook, and never shows or keeps their secrets in clear", () =>
      Effect.gen(function*() {
        const network = yield* BlueskyNetwork
        const mastodon = yield* makeMastodonFake()
        const receiver = yield* webhookReceiver
        const { admin, connect, member, path, team } = yield* adminsTeam
        const pds = yield* Effect.promise(() => network.createAccount({ displayName: "Bea Sky", avatar: true }))

        const bluesky = yield* connect({ provider: "bluesky", handle: pds.handle, appPassword: pds.appPassword, serviceUrl: network.serviceUrl })
        expect(bluesky.status, JSON.stringify(bluesky.body)).toBe(201)
        expect(Object.keys(bluesky.body).sort()).toEqual([...accountFields, "signingSecret"].sort())
        expect(bluesky.body).toMatchObject({
          teamId: team.id,
          provider: "bluesky",
          handle: pds.handle,
          displayName: "Bea Sky",
          profileUrl: `https://bsky.app/profile/${pds.handle}`,
          status: "connected",
          lastError: null,
          signingSecret: null
        })
        expect(bluesky.body.avatarUrl).toMatch(/^http:\/\/localhost:\d+\/xrpc\/com\.atproto\.sync\.getBlob\?/)

        const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
        expect(toot.status).toBe(201)
        expect(toot.body).toMatchObject({ provider: "mastodon", handle: "@alice@mastodon.test", displayName: "Alice", profileUrl: `${mastodon.url}/@alice` })

        const hook = yield* connect({ provider: "webhook", url: `${receiver}/hooks/postline` })
        expect(hook.status).toBe(201)
        expect(hook.body).toMatchObject({ provider: "webhook", handle: new URL(receiver).host, displayName: null })
        expect(hook.body.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)

        // Members see them; the list sorts by handle for name, and filters by provider and status.
        const list = yield* raw({ method: "GET", path: path("?sortBy=name&sortOrder=asc"), token: member.token })
        expect(list.status).toBe(200)
        expect(list.body.total).toBe(3)
        for (const account of list.body.data) expect(Object.keys(account).sort()).toEqual(accountFields)
        expect(list.body.data.map((account: any) => account.handle)).toEqual(
          [pds.handle, "@alice@mastodon.test", new URL(receiver).host].sort()
        )
        const onlyMastodon = yield* raw({ method: "GET", path: path("?provider=mastodon"), token: admin.token })
        expect(onlyMastodon.body.data.map((account: any) => account.id)).toEqual([toot.body.id])
        const reconnecting = yield* raw({ method: "GET", path: path("?status=reconnect_required"), token: admin.token })
        expect(reconnecting.body).toMatchObject({ data: [], total: 0 })
        const one = yield* raw({ method: "GET", path: path(`/${hook.body.id}`), token: member.token })
        expect(Object.keys(one.body).sort()).toEqual(accountFields)

        const secrets = [pds.appPassword, mastodon.token, hook.body.signingSecret]
        const answers = JSON.stringify([list.body, one.body, onlyMastodon.body])
        const stored = JSON.stringify(yield* rowsOf(team.id))
        for (const secret of secrets) {
          expect(answers).not.toContain(secret)
          expect(stored).not.toContain(secret)
          expect(logged.join("\n")).not.toContain(secret)
        }
        for (const row of yield* rowsOf(team.id)) expect(row.credentials).toMatch(/^v1\.[A-Za-z0-9_-]{8}\./)
      }))

    it.scoped("credentials the provider refuses give 400 with its reason, and nothing is kept", () =>
      Effect.gen(function*() {
        const network = yield* BlueskyNetwork
        const mastodon = yield* makeMastodonFake()
        const { connect, team } = yield* adminsTeam
        const pds = yield* Effect.promise(() => network.createAccount())

        const wrongPassword = yield* connect({
          provider: "bluesky",
          handle: pds.handle,
          appPassword: "aaaa-bbbb-cccc-dddd",
          serviceUrl: network.serviceUrl
        })
        expect(wrongPassword.status).toBe(400)
        expect(wrongPassword.body._tag).toBe("BadRequest")
        expect(wrongPassword.body.message).toMatch(/^The bluesky account could not be connected: .*Invalid identifier or password/)

        const wrongToken = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: "not-the-token" })
        expect(wrongToken.status).toBe(400)
        expect(wrongToken.body.message).toBe("The mastodon account could not be connected: The access token is invalid")

        // The account's own password is refused before anything is sent, and not quoted back.
        const mainPassword = yield* connect({
          provider: "bluesky",
          handle: pds.handle,
          appPassword: pds.password,
          serviceUrl: network.serviceUrl
        })
        expect(mainPassword.status).toBe(400)
        expect(mainPassword.body._tag).toBe("HttpApiDecodeError")
        expect(mainPassword.body.issues).toEqual([
          { path: ["appPassword"], message: "must be a Bluesky app password (xxxx-xxxx-xxxx-xxxx)" }
        ])
        expect(JSON.stringify(mainPassword.body)).not.toContain(pds.password)
        expect(logged.join("\n")).not.toContain(pds.password)

        for (const json of [
          { provider: "twitter", handle: "x" },
          { provider: "webhook" },
          { provider: "webhook", url: "ftp://example.com/" },
          { provider: "webhook", url: "https://example.com/", extra: true },
          { provider: "mastodon", instanceUrl: mastodon.url, accessToken: "" }
        ]) {
          const refused = yield* connect(json)
          expect(refused.status, JSON.stringify(json)).toBe(400)
          expect(refused.body._tag).toBe("HttpApiDecodeError")
        }
        expect(yield* rowsOf(team.id)).toEqual([])
      }))

    it.scoped("an account whose credentials are revoked at the provider needs reconnecting; new credentials connect it again", () =>
      Effect.gen(function*() {
        const network = yield* BlueskyNetwork
        const mastodon = yield* makeMastodonFake()
        const { admin, connect, member, path } = yield* adminsTeam
        const pds = yield* Effect.promise(() => network.createAccount())
        const bluesky = (yield* connect({
          provider: "bluesky",
          handle: pds.handle,
          appPassword: pds.appPassword,
          serviceUrl: network.serviceUrl
        })).body
        const toot = (yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })).body
        const verify = (id: string) => raw({ method: "POST", path: path(`/${id}/verify`), token: admin.token })

        expect((yield* verify(toot.id)).body).toMatchObject({ status: "connected", lastError: null })
        mastodon.revokeToken()
        const revoked = yield* verify(toot.id)
        expect(revoked.status).toBe(200)
        expect(revoked.body).toMatchObject({
          status: "reconnect_required",
          lastError: { category: "auth", message: "The access token is invalid" }
        })
        expect(revoked.body.lastError.at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
        expect(Date.parse(revoked.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(toot.updatedAt))
        // The same token again: refused, and nothing changes.
        const same = yield* raw({
          method: "PATCH",
          path: path(`/${toot.id}`),
          token: admin.token,
          json: { provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token }
        })
        expect(same.status).toBe(400)
        expect((yield* raw({ method: "GET", path: path(`/${toot.id}`), token: admin.token })).body.status).toBe("reconnect_required")

        yield* Effect.promise(() => network.revokeAppPassword(pds))
        expect((yield* verify(bluesky.id)).body).toMatchObject({ status: "reconnect_required", lastError: { category: "auth" } })
        const listed = yield* raw({ method: "GET", path: path("?status=reconnect_required"), token: member.token })
        expect(listed.body.data.map((account: any) => account.id).sort()).toEqual([bluesky.id, toot.id].sort())

        // New credentials (another app password's account) are checked, and connect the account again.
        const other = yield* Effect.promise(() => network.createAccount({ displayName: "Other" }))
        const patched = yield* raw({
          method: "PATCH",
          path: path(`/${bluesky.id}`),
          token: admin.token,
          json: { provider: "bluesky", handle: other.handle, appPassword: other.appPassword, serviceUrl: network.serviceUrl }
        })
        expect(patched.status).toBe(200)
        expect(Object.keys(patched.body).sort()).toEqual(accountFields)
        expect(patched.body).toMatchObject({ id: bluesky.id, handle: other.handle, displayName: "Other", status: "connected", lastError: null })

        // Members see accounts but do not change them.
        expect((yield* raw({ method: "POST", path: path(`/${bluesky.id}/verify`), token: member.token })).status).toBe(403)
      }))

    it.scoped("an account whose credentials this server cannot read needs reconnecting, and new credentials repair it", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const receiver = yield* webhookReceiver
        const { call, connect, draft, postNow, team } = yield* publishingTeam(5)
        const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
        const hook = yield* connect({ provider: "webhook", url: `${receiver}/a` })
        const get = (id: string) => Effect.map(call("GET", `/social-accounts/${id}`), (response) => response.body)

        // The records as a server with another key wrote them: this one has neither it nor a previous key.
        const sql = yield* SqlClient.SqlClient
        const cipher = yield* CredentialsCipher
        const elsewhere = yield* CredentialsCipher.pipe(Effect.provide(TestCipher))
        const rows = yield* sql<{ id: string; credentials: string }>`SELECT id, credentials FROM social_accounts WHERE team_id = ${team.id}`
        const readable = new Map(rows.map((row) => [row.id, row.credentials]))
        for (const row of rows) {
          const foreign = yield* elsewhere.encrypt(yield* cipher.decrypt(row.credentials))
          yield* sql`UPDATE social_accounts SET credentials = ${foreign} WHERE id = ${row.id}`
        }
        const unreadable = { status: "reconnect_required", lastError: { category: "auth", message: unknownKeyMessage } }

        // A check says so as a refusal by the provider does: 200, and the account needs reconnecting.
        const verified = yield* call("POST", `/social-accounts/${toot.id}/verify`)
        expect(verified.status).toBe(200)
        expect(verified.body).toMatchObject(unreadable)

        // At start, a server without their key refuses (another process may have it) and marks nothing; once the
        // key is declared lost, it starts and the accounts need reconnecting; a key given back connects them again.
        const refused = yield* Effect.flip(Layer.build(CredentialsKeysCheckLive))
        expect(refused).toMatchObject({ _tag: "StartupError", message: expect.stringContaining(`encrypted with key ${elsewhere.keyId} (1 account)`) })
        expect(yield* get(hook.id)).toMatchObject({ status: "connected", lastError: null })
        const repo = yield* SocialAccountsRepo.pipe(Effect.provide(SocialAccountsRepo.Default))
        expect(yield* repo.markLostKey(elsewhere.keyId, unknownKeyMessage)).toEqual({ marked: 1, total: 2 })
        yield* Layer.build(CredentialsKeysCheckLive)
        expect(yield* get(hook.id)).toMatchObject(unreadable)
        const listed = yield* call("GET", "/social-accounts?status=reconnect_required")
        expect(listed.body.data.map((account: any) => account.id).sort()).toEqual([hook.id, toot.id].sort())
        yield* sql`UPDATE social_accounts SET credentials = ${readable.get(hook.id)!} WHERE id = ${hook.id}`
        yield* Layer.build(CredentialsKeysCheckLive)
        expect(yield* get(hook.id)).toMatchObject({ status: "connected", lastError: null })
        yield* sql`UPDATE social_accounts SET credentials = ${yield* elsewhere.encrypt("{}")} WHERE id = ${hook.id}`

        // New credentials repair it without reading the old ones; the post then goes out.
        const patched = yield* call("PATCH", `/social-accounts/${toot.id}`, {
          provider: "mastodon",
          instanceUrl: mastodon.url,
          accessToken: mastodon.token
        })
        expect(patched.status, JSON.stringify(patched.body)).toBe(200)
        expect(patched.body).toMatchObject({ status: "connected", lastError: null })
        const post = yield* draft("After the repair")
        const published = yield* postNow(post.id, [toot.id])
        expect(published.body.results).toMatchObject([{ socialAccountId: toot.id, status: "published" }])
        expect(mastodon.statuses.map((status) => status.text)).toEqual(["After the repair"])

        // A webhook's signing secret that cannot be read cannot be kept, and PATCH could not show a new one.
        const webhook = yield* call("PATCH", `/social-accounts/${hook.id}`, { provider: "webhook", url: `${receiver}/b` })
        expect(webhook).toMatchObject({ status: 409, body: { _tag: "Conflict" } })
        expect(webhook.body.message).toMatch(/cannot read the webhook's stored signing secret.*connect the webhook again/)
      }))

    it.scoped("a change of credentials keeps the provider; a webhook keeps its signing secret; removal forgets the account", () =>
      Effect.gen(function*() {
        const receiver = yield* webhookReceiver
        const { admin, connect, path, team } = yield* adminsTeam
        const hook = (yield* connect({ provider: "webhook", url: `${receiver}/a` })).body
        const patch = (json: unknown) => raw({ method: "PATCH", path: path(`/${hook.id}`), token: admin.token, json })

        const otherProvider = yield* patch({ provider: "mastodon", instanceUrl: receiver, accessToken: "token" })
        expect(otherProvider).toMatchObject({ status: 400, body: { _tag: "BadRequest" } })
        expect(otherProvider.body.message).toMatch(/^This is a webhook account/)

        const moved = yield* patch({ provider: "webhook", url: `${receiver}/b` })
        expect(moved.status).toBe(200)
        expect(moved.body).not.toHaveProperty("signingSecret")
        const [row] = yield* rowsOf(team.id)
        const cipher = yield* CredentialsCipher
        const credentials = yield* Effect.flatMap(cipher.decrypt(row.credentials as string), credentialsFromJson)
        expect(credentials).toMatchObject({ provider: "webhook", url: `${receiver}/b` })
        expect(credentials.provider === "webhook" && Schema.encodeSync(Schema.Redacted(Schema.String))(credentials.signingSecret))
          .toBe(hook.signingSecret)

        const removed = yield* raw({ method: "DELETE", path: path(`/${hook.id}`), token: admin.token })
        expect(removed.status).toBe(200)
        expect(removed.body).toMatchObject({ id: hook.id, provider: "webhook" })
        expect(yield* rowsOf(team.id)).toEqual([])
        expect((yield* raw({ method: "GET", path: path(`/${hook.id}`), token: admin.token })).status).toBe(404)
        expect((yield* raw({ method: "DELETE", path: path(`/${hook.id}`), token: admin.token })).status).toBe(404)
      }))

    it.scoped("a webhook's name is its displayName, which tells apart two webhooks on one host (their handle)", () =>
      Effect.gen(function*() {
        const receiver = yield* webhookReceiver
        const host = new URL(receiver).host
        const { admin, connect, path } = yield* adminsTeam
        const blog = yield* connect({ provider: "webhook", url: `${receiver}/blog`, name: "Blog" })
        const shop = yield* connect({ provider: "webhook", url: `${receiver}/shop`, name: "Shop" })
        expect([blog, shop].map(({ status, body }) => [status, body.handle, body.displayName])).toEqual([[201, host, "Blog"], [201, host, "Shop"]])

        const renamed = yield* raw({
          method: "PATCH",
          path: path(`/${blog.body.id}`),
          token: admin.token,
          json: { provider: "webhook", url: `${receiver}/blog`, name: "News" }
        })
        expect(renamed).toMatchObject({ status: 200, body: { handle: host, displayName: "News" } })
        const verified = yield* raw({ method: "POST", path: path(`/${blog.body.id}/verify`), token: admin.token })
        expect(verified).toMatchObject({ status: 200, body: { displayName: "News" } })

        const blank = yield* connect({ provider: "webhook", url: `${receiver}/c`, name: " " })
        expect(blank).toMatchObject({ status: 400, body: { message: expect.stringContaining("name") } })
      }))
  }
)

layer(makeTestServer(Logger.minimumLogLevel(LogLevel.Warning), GuardedProviders), { excludeTestServices: true })(
  "social accounts behind the outbound guard",
  (it) => {
    describe("addresses that resolve to this machine or a private network are refused at connect", () => {
      it.effect.each([
        ["loopback", { provider: "webhook", url: "https://127.0.0.1/hook" }],
        ["IPv6 loopback", { provider: "webhook", url: "https://[::1]/hook" }],
        ["a private network", { provider: "webhook", url: "https://10.1.2.3/hook" }],
        ["link-local (cloud metadata)", { provider: "webhook", url: "https://169.254.169.254/latest" }],
        ["IPv4-mapped loopback", { provider: "webhook", url: "https://[::ffff:127.0.0.1]/hook" }],
        ["plain http", { provider: "webhook", url: "http://example.com/hook" }],
        ["a Mastodon instance on localhost", { provider: "mastodon", instanceUrl: "https://localhost/", accessToken: "t" }]
      ] as const)("%s", ([, json]) =>
        Effect.gen(function*() {
          const { connect, team } = yield* adminsTeam
          const refused = yield* connect(json)
          expect(refused.status).toBe(400)
          expect(refused.body._tag).toBe("BadRequest")
          expect(refused.body.message).toMatch(/could not be connected/)
          expect(yield* rowsOf(team.id)).toEqual([])
        }))
    })
  }
)
