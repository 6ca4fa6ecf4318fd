import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Schedule } from "effect"
import { hashSecret } from "../src/Users/Secrets.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

const apiKeyFields = [
  "createdAt",
  "createdByUserId",
  "expiresAt",
  "id",
  "lastUsedAt",
  "name",
  "organizationId",
  "prefix",
  "revokedAt"
]

const keysPath = (organizationId: string, apiKeyId?: string) =>
  `/v1/organizations/${organizationId}/api-keys${apiKeyId ? `/${apiKeyId}` : ""}`

/** An admin's organization with one team, and a way to mint keys for it. */
const organizationWithKey = Effect.gen(function*() {
  const admin = yield* signUp("Ada Admin")
  const organization = yield* admin.client.organizations.createOrganization({ payload: { name: "Acme" } })
  const team = yield* admin.client.teams.createTeam({ payload: { organizationId: organization.id, name: "Social" } })
  const mint = (name = "CI key", expiresAt?: string | null) =>
    raw({ method: "POST", path: keysPath(organization.id), token: admin.token, json: { name, expiresAt } }).pipe(
      Effect.tap((response) => expect(response.status).toBe(201)),
      Effect.map((response) => response.body)
    )
  const created = yield* mint()
  return { admin, organization, team, mint, created, key: created.key as string }
})

layer(TestServer, { excludeTestServices: true })("API keys", (it) => {
  describe("create", () => {
    it.effect("answers the key with its secret once, stored only as a hash", () =>
      Effect.gen(function*() {
        const { admin, created, organization } = yield* organizationWithKey
        expect(Object.keys(created).sort()).toEqual([...apiKeyFields, "key"].sort())
        expect(created).toMatchObject({
          organizationId: organization.id,
          name: "CI key",
          createdByUserId: admin.user.id,
          expiresAt: null,
          lastUsedAt: null,
          revokedAt: null
        })
        expect(created.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
        // 32 random bytes in base64url after the prefix.
        expect(created.key).toMatch(/^plk_[A-Za-z0-9_-]{43}$/)
        expect(created.prefix).toBe(created.key.slice(0, 12))

        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql`SELECT * FROM api_keys WHERE id = ${created.id}`
        expect(rows).toHaveLength(1)
        expect(rows[0].key_hash).toBe(hashSecret(created.key))
        expect(JSON.stringify(rows)).not.toContain(created.key)

        const list = yield* raw({ method: "GET", path: keysPath(organization.id), token: admin.token })
        expect(list.status).toBe(200)
        expect(list.body.total).toBe(1)
        expect(Object.keys(list.body.data[0]).sort()).toEqual(apiKeyFields)
        expect(JSON.stringify(list.body)).not.toContain(created.key)
      }))

    it.effect("every key is new", () =>
      Effect.gen(function*() {
        const { created, mint } = yield* organizationWithKey
        const second = yield* mint()
        expect(second.key).not.toBe(created.key)
        expect(second.id).not.toBe(created.id)
      }))

    it.effect("names are 2 to 64 characters; the body is strict", () =>
      Effect.gen(function*() {
        const { admin, organization } = yield* organizationWithKey
        const create = (json: unknown) => raw({ method: "POST", path: keysPath(organization.id), token: admin.token, json })
        expect((yield* create({ name: "ab" })).status).toBe(201)
        expect((yield* create({ name: "x".repeat(64) })).status).toBe(201)
        for (const json of [{ name: "a" }, { name: "x".repeat(65) }, { name: "   " }, {}, { name: "ok key", extra: 1 }]) {
          const refused = yield* create(json)
          expect(refused.status, JSON.stringify(json)).toBe(400)
          expect(refused.body._tag).toBe("HttpApiDecodeError")
          expect(typeof refused.body.message).toBe("string")
        }
        const sql = yield* SqlClient.SqlClient
        const [{ count }] = yield* sql<{ count: number }>`SELECT count(*)::int FROM api_keys WHERE organization_id = ${organization.id}`
        expect(count).toBe(3)
      }))

    it.effect("expiresAt must be an instant with an offset, in the future, or null", () =>
      Effect.gen(function*() {
        const { admin, mint, organization } = yield* organizationWithKey
        const future = new Date(Date.now() + 86_400_000)
        const withOffset = yield* mint("expiring", future.toISOString().replace("Z", "+00:00"))
        expect(withOffset.expiresAt).toBe(future.toISOString())
        expect((yield* mint("never", null)).expiresAt).toBeNull()
        expect((yield* mint("leap day", "2028-02-29T12:00:00+01:00")).expiresAt).toBe("2028-02-29T11:00:00.000Z")
        const invalid = [
          new Date(Date.now() - 60_000).toISOString(),
          "2999-01-01T00:00:00",
          "2999-01-01",
          "soon",
          1,
          "2999-02-30T00:00:00Z",
          "2999-13-01T00:00:00Z",
          "2999-01-01T24:00:00Z",
          "2999-01-01T00:00+23:59",
          "9999-12-31T23:59:59.9999Z"
        ]
        for (const expiresAt of invalid) {
          const refused = yield* raw({
            method: "POST",
            path: keysPath(organization.id),
            token: admin.token,
            json: { name: "bad", expiresAt }
          })
          expect(refused.status, String(expiresAt)).toBe(400)
          expect(refused.body.issues.map((issue: any) => issue.path)).toEqual([["expiresAt"]])
        }
      }))
  })

  describe("list", () => {
    it.effect("pages by createdAt or name, never by updatedAt", () =>
      Effect.gen(function*() {
        const { admin, mint, organization } = yield* organizationWithKey
        for (const name of ["delta", "bravo", "charlie"]) yield* mint(name)
        const names = (cursor?: string) =>
          admin.client.apiKeys.listApiKeys({
            path: { organizationId: organization.id },
            urlParams: { sortBy: "name", sortOrder: "asc", limit: 3, ...(cursor ? { cursor } : {}) }
          })
        const first = yield* names()
        expect(first.total).toBe(4)
        expect(first.data.map((key) => key.name)).toEqual(["CI key", "bravo", "charlie"])
        const second = yield* names(first.nextCursor!)
        expect(second.data.map((key) => key.name)).toEqual(["delta"])
        expect(second.nextCursor).toBeNull()

        const newest = yield* admin.client.apiKeys.listApiKeys({ path: { organizationId: organization.id }, urlParams: {} })
        expect(newest.data.map((key) => key.name)).toEqual(["charlie", "bravo", "delta", "CI key"])

        const refused = yield* raw({ method: "GET", path: `${keysPath(organization.id)}?sortBy=updatedAt`, token: admin.token })
        expect(refused.status).toBe(400)
        expect(refused.body.issues[0].path).toEqual(["sortBy"])
      }))

    it.effect("members who do not manage the organization get 403; strangers 404", () =>
      Effect.gen(function*() {
        const { created, organization } = yield* organizationWithKey
        const member = yield* signUp()
        const stranger = yield* signUp()
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${member.user.id}, ${organization.id}, 'member')`
        for (const [caller, status, tag] of [[member, 403, "Forbidden"], [stranger, 404, "NotFound"]] as const) {
          for (
            const request of [
              { method: "GET", path: keysPath(organization.id) },
              { method: "POST", path: keysPath(organization.id), json: { name: "mine" } },
              { method: "DELETE", path: keysPath(organization.id, created.id) }
            ] as const
          ) {
            const refused = yield* raw({ ...request, token: caller.token })
            expect(refused.status, `${request.method} ${request.path}`).toBe(status)
            expect(refused.body._tag).toBe(tag)
          }
        }
        const [key] = yield* sql`SELECT revoked_at FROM api_keys WHERE id = ${created.id}`
        expect(key.revoked_at).toBeNull()
      }))
  })

  describe("acting with a key", () => {
    it.effect("a key sees its organization and its teams, and nothing else", () =>
      Effect.gen(function*() {
        const { key, organization, team } = yield* organizationWithKey
        const other = yield* organizationWithKey
        const organizations = yield* raw({ method: "GET", path: "/v1/organizations", token: key })
        expect(organizations.status).toBe(200)
        expect(organizations.body.total).toBe(1)
        expect(organizations.body.data.map((o: any) => o.id)).toEqual([organization.id])

        const teams = yield* raw({ method: "GET", path: "/v1/teams", token: key })
        expect(teams.body.data.map((t: any) => t.id)).toEqual([team.id])
        const filtered = yield* raw({ method: "GET", path: `/v1/teams?organizationId=${organization.id}`, token: key })
        expect(filtered.body.data.map((t: any) => t.id)).toEqual([team.id])

        expect((yield* raw({ method: "GET", path: `/v1/organizations/${organization.id}`, token: key })).status).toBe(200)
        for (
          const path of [
            `/v1/organizations/${other.organization.id}`,
            `/v1/teams/${other.team.id}`,
            `/v1/teams?organizationId=${other.organization.id}`,
            keysPath(other.organization.id)
          ]
        ) {
          const hidden = yield* raw({ method: "GET", path, token: key })
          expect(hidden.status, path).toBe(404)
          expect(hidden.body._tag).toBe("NotFound")
        }
      }))

    it.effect("a key does what an admin does in its organization", () =>
      Effect.gen(function*() {
        const { key, organization, team } = yield* organizationWithKey
        const renamed = yield* raw({ method: "PATCH", path: `/v1/organizations/${organization.id}`, token: key, json: { name: "Acme 2" } })
        expect(renamed.status).toBe(200)
        expect(renamed.body.name).toBe("Acme 2")
        const created = yield* raw({ method: "POST", path: "/v1/teams", token: key, json: { organizationId: organization.id, name: "Ads" } })
        expect(created.status).toBe(201)
        const updated = yield* raw({ method: "PATCH", path: `/v1/teams/${team.id}`, token: key, json: { name: "Social 2" } })
        expect(updated.status).toBe(200)
        expect(updated.body.name).toBe("Social 2")
      }))

    it.effect("a key may not create organizations, nor touch API keys or members (403)", () =>
      Effect.gen(function*() {
        const { admin, created, key, organization } = yield* organizationWithKey
        const sql = yield* SqlClient.SqlClient
        const fingerprint = sql`SELECT
          (SELECT count(*)::int FROM organizations) AS organizations,
          (SELECT count(*)::int FROM api_keys WHERE revoked_at IS NULL) AS keys,
          (SELECT string_agg(user_id || role, ',' ORDER BY user_id) FROM memberships) AS memberships`
        const before = yield* fingerprint
        for (
          const request of [
            { method: "POST", path: "/v1/organizations", json: { name: "Mine" } },
            { method: "GET", path: keysPath(organization.id) },
            { method: "POST", path: keysPath(organization.id), json: { name: "child" } },
            { method: "DELETE", path: keysPath(organization.id, created.id) },
            { method: "GET", path: `/v1/organizations/${organization.id}/members` },
            { method: "POST", path: `/v1/organizations/${organization.id}/members`, json: { email: admin.user.email, role: "member" } },
            { method: "PATCH", path: `/v1/organizations/${organization.id}/members/${admin.user.id}`, json: { role: "member" } },
            { method: "DELETE", path: `/v1/organizations/${organization.id}/members/${admin.user.id}` }
          ] as const
        ) {
          const refused = yield* raw({ ...request, token: key })
          expect(refused.status, `${request.method} ${request.path}`).toBe(403)
          expect(refused.body._tag).toBe("Forbidden")
          expect(refused.body.message).toMatch(/API key may not/)
        }
        expect(yield* fingerprint).toEqual(before)
      }))

    it.effect("lastUsedAt is set on use, then at most once a minute", () =>
      Effect.gen(function*() {
        const { admin, created, key, organization } = yield* organizationWithKey
        const sql = yield* SqlClient.SqlClient
        const lastUsedAt = Effect.map(
          sql<{ lastUsedAt: Date | null }>`SELECT last_used_at AS "lastUsedAt" FROM api_keys WHERE id = ${created.id}`,
          ([row]) => row.lastUsedAt
        )
        // The use is recorded beside the request, so wait for it rather than expect it at once.
        const recorded = (after: number) =>
          lastUsedAt.pipe(
            Effect.filterOrFail((at) => at !== null && at.getTime() > after),
            Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("5 seconds")))
          )

        yield* raw({ method: "GET", path: "/v1/organizations", token: key })
        const first = yield* recorded(0)
        yield* raw({ method: "GET", path: "/v1/organizations", token: key })
        yield* Effect.sleep("200 millis")
        expect(yield* lastUsedAt).toEqual(first)

        const listed = yield* admin.client.apiKeys.listApiKeys({ path: { organizationId: organization.id }, urlParams: {} })
        expect(listed.data[0].lastUsedAt).toBe(first!.toISOString())

        const aMinuteAgo = new Date(Date.now() - 61_000)
        yield* sql`UPDATE api_keys SET last_used_at = ${aMinuteAgo} WHERE id = ${created.id}`
        yield* raw({ method: "GET", path: "/v1/organizations", token: key })
        yield* recorded(aMinuteAgo.getTime())
      }))
  })

  describe("revoke", () => {
    it.effect("a revoked key gets 401 from that moment; revoking again keeps the first revokedAt", () =>
      Effect.gen(function*() {
        const { admin, created, key, organization } = yield* organizationWithKey
        expect((yield* raw({ method: "GET", path: "/v1/organizations", token: key })).status).toBe(200)
        const revoked = yield* raw({ method: "DELETE", path: keysPath(organization.id, created.id), token: admin.token })
        expect(revoked.status).toBe(200)
        expect(Object.keys(revoked.body).sort()).toEqual(apiKeyFields)
        expect(revoked.body.revokedAt).toMatch(/Z$/)

        const refused = yield* raw({ method: "GET", path: "/v1/organizations", token: key })
        expect(refused.status).toBe(401)
        expect(refused.body).toEqual({ _tag: "Unauthorized", message: "Invalid, revoked or expired API key" })

        const again = yield* raw({ method: "DELETE", path: keysPath(organization.id, created.id), token: admin.token })
        expect(again.status).toBe(200)
        expect(again.body.revokedAt).toBe(revoked.body.revokedAt)
      }))

    it.effect("a key of another organization, or none, is not found", () =>
      Effect.gen(function*() {
        const { admin, organization } = yield* organizationWithKey
        const other = yield* organizationWithKey
        const foreign = yield* raw({ method: "DELETE", path: keysPath(organization.id, other.created.id), token: admin.token })
        expect(foreign.status).toBe(404)
        expect(foreign.body._tag).toBe("NotFound")
        expect((yield* raw({ method: "GET", path: "/v1/organizations", token: other.key })).status).toBe(200)
        const missing = yield* raw({
          method: "DELETE",
          path: keysPath(organization.id, "00000000-0000-4000-8000-000000000000"),
          token: admin.token
        })
        expect(missing.status).toBe(404)
      }))

    it.effect("the keys a person created are revoked when they leave or become a plain member, and only theirs", () =>
      Effect.gen(function*() {
        const { admin, key: adminsKey, organization } = yield* organizationWithKey
        const sql = yield* SqlClient.SqlClient
        const colleague = (role: "admin" | "owner") =>
          Effect.gen(function*() {
            const user = yield* signUp()
            yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${user.user.id}, ${organization.id}, ${role})`
            const created = yield* raw({ method: "POST", path: keysPath(organization.id), token: user.token, json: { name: "theirs" } })
            return { ...user, key: created.body.key as string }
          })
        const works = (key: string) => Effect.map(raw({ method: "GET", path: "/v1/teams", token: key }), (r) => r.status)
        const membersPath = `/v1/organizations/${organization.id}/members`

        const leaving = yield* colleague("admin")
        const demoted = yield* colleague("admin")
        const promoted = yield* colleague("admin")
        expect(yield* works(leaving.key)).toBe(200)
        expect(yield* works(demoted.key)).toBe(200)

        expect((yield* raw({ method: "DELETE", path: `${membersPath}/${leaving.user.id}`, token: leaving.token })).status).toBe(200)
        expect(yield* works(leaving.key)).toBe(401)

        const demote = yield* raw({ method: "PATCH", path: `${membersPath}/${demoted.user.id}`, token: admin.token, json: { role: "member" } })
        expect(demote.status).toBe(200)
        expect(yield* works(demoted.key)).toBe(401)

        const owner = yield* colleague("owner")
        const promote = yield* raw({ method: "PATCH", path: `${membersPath}/${promoted.user.id}`, token: owner.token, json: { role: "owner" } })
        expect(promote.status).toBe(200)
        expect(yield* works(promoted.key)).toBe(200)
        expect(yield* works(adminsKey)).toBe(200)
        expect(yield* works(owner.key)).toBe(200)
      }))

    it.effect("an expired key gets 401", () =>
      Effect.gen(function*() {
        const { created, key } = yield* organizationWithKey
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = ${created.id}`
        const refused = yield* raw({ method: "GET", path: "/v1/organizations", token: key })
        expect(refused.status).toBe(401)
        expect(refused.body._tag).toBe("Unauthorized")
      }))

    it.effect("an unknown key with the right prefix gets 401", () =>
      Effect.gen(function*() {
        const refused = yield* raw({ method: "GET", path: "/v1/organizations", token: `plk_${"A".repeat(43)}` })
        expect(refused.status).toBe(401)
      }))
  })
})
