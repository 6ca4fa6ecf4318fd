import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { PostlineApi } from "@postline/domain"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { generateSecret, hashSecret } from "../src/Users/Secrets.js"
import { raw, TestServer } from "./support/TestServer.js"

/**
 * Every endpoint against every kind of caller: the status each gets, that a
 * refused call changed nothing, and that no answer shows another
 * organization's data.
 */

const callers = [
  "owner",
  "admin",
  "member",
  "outsider",
  "ownKey",
  "foreignKey",
  "revokedKey",
  "expiredToken",
  "anonymous"
] as const
type CallerKind = typeof callers[number]

/** Two organizations: A, where the owner, admin, member and A's keys belong, and B, the outsider's. */
const seedWorld = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const insertUser = (name: string) =>
    Effect.gen(function*() {
      const [{ id }] = yield* sql<{ id: string }>`INSERT INTO users (email, name)
        VALUES (${`${randomUUID()}@example.com`}, ${name}) RETURNING id`
      const token = generateSecret("accessToken")
      yield* sql`INSERT INTO access_tokens (token_hash, user_id) VALUES (${hashSecret(token)}, ${id})`
      return { id, token }
    })
  const insertOrganization = (name: string) =>
    Effect.map(sql<{ id: string }>`INSERT INTO organizations (name) VALUES (${name}) RETURNING id`, ([row]) => row.id)
  const join = (userId: string, organizationId: string, role: string) =>
    sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${userId}, ${organizationId}, ${role})`
  const insertTeam = (organizationId: string) =>
    Effect.map(
      sql<{ id: string }>`INSERT INTO teams (organization_id, name) VALUES (${organizationId}, 'Team') RETURNING id`,
      ([row]) => row.id
    )
  const insertKey = (organizationId: string, createdBy: string, revoked = false) =>
    Effect.gen(function*() {
      const key = generateSecret("apiKey")
      const [{ id }] = yield* sql<{ id: string }>`INSERT INTO api_keys
          (organization_id, name, prefix, key_hash, created_by_user_id, revoked_at)
        VALUES (${organizationId}, 'key', ${key.slice(0, 12)}, ${hashSecret(key)}, ${createdBy},
          ${revoked ? sql`now()` : null})
        RETURNING id`
      return { id, key }
    })

  const [owner, admin, member, outsider] = yield* Effect.all(["Owner", "Admin", "Member", "Outsider"].map(insertUser))
  const organizationA = yield* insertOrganization("Org A")
  const organizationB = yield* insertOrganization("Org B")
  yield* join(owner.id, organizationA, "owner")
  yield* join(admin.id, organizationA, "admin")
  yield* join(member.id, organizationA, "member")
  yield* join(outsider.id, organizationB, "admin")
  const teamA = yield* insertTeam(organizationA)
  const teamB = yield* insertTeam(organizationB)
  const ownKey = yield* insertKey(organizationA, admin.id)
  const foreignKey = yield* insertKey(organizationB, outsider.id)
  const revokedKey = yield* insertKey(organizationA, admin.id, true)
  const expiredToken = generateSecret("accessToken")
  yield* sql`INSERT INTO access_tokens (token_hash, user_id, expires_at)
    VALUES (${hashSecret(expiredToken)}, ${owner.id}, now() - interval '1 second')`

  const tokens: Record<CallerKind, string | undefined> = {
    owner: owner.token,
    admin: admin.token,
    member: member.token,
    outsider: outsider.token,
    ownKey: ownKey.key,
    foreignKey: foreignKey.key,
    revokedKey: revokedKey.key,
    expiredToken,
    anonymous: undefined
  }
  /** Fresh things to act on, so that one caller's allowed change leaves the next caller's case as it was. */
  const freshTargets = Effect.gen(function*() {
    const bystander = yield* insertUser("Bystander")
    yield* join(bystander.id, organizationA, "member")
    const newcomer = yield* insertUser("Newcomer")
    const [{ email }] = yield* sql<{ email: string }>`SELECT email FROM users WHERE id = ${newcomer.id}`
    const spareKey = yield* insertKey(organizationA, admin.id)
    return { bystanderId: bystander.id, newcomerEmail: email, spareKeyId: spareKey.id }
  })
  return {
    organizationA,
    organizationB,
    teamA,
    teamB,
    tokens,
    freshTargets,
    /** The ids a caller must never see: the other organization's. */
    foreignIds: (caller: CallerKind) =>
      caller === "outsider" || caller === "foreignKey" ? [organizationA, teamA] : [organizationB, teamB]
  }
})

type World = Effect.Effect.Success<typeof seedWorld>
type Targets = Effect.Effect.Success<World["freshTargets"]>

/** Everything a call could change, in one value; an API key's lastUsedAt is recorded on any use, so it is left out. */
const fingerprint = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ digest: string }>`SELECT md5(coalesce(string_agg(r, '|' ORDER BY r), '')) AS digest FROM (
      SELECT 'users' || t::text FROM users t UNION ALL
      SELECT 'organizations' || t::text FROM organizations t UNION ALL
      SELECT 'memberships' || t::text FROM memberships t UNION ALL
      SELECT 'teams' || t::text FROM teams t UNION ALL
      SELECT 'team_access' || t::text FROM team_access t UNION ALL
      SELECT 'access_tokens' || t::text FROM access_tokens t UNION ALL
      SELECT 'logins' || t::text FROM logins t UNION ALL
      SELECT 'refresh_tokens' || t::text FROM refresh_tokens t UNION ALL
      SELECT 'device_authorizations' || t::text FROM device_authorizations t UNION ALL
      SELECT 'agent_defaults' || t::text FROM agent_defaults t UNION ALL
      SELECT 'api_keys' || (t.id, t.organization_id, t.name, t.key_hash, t.expires_at, t.revoked_at)::text FROM api_keys t
    ) AS rows (r)`.pipe(Effect.map(([row]) => row.digest)))

interface Call {
  readonly method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE"
  readonly path: string
  readonly json?: unknown
}

/** Statuses in the order of `callers`: owner, admin, member, outsider, ownKey, foreignKey, revokedKey, expiredToken, anonymous. */
type Statuses = readonly [number, number, number, number, number, number, number, number, number]

interface Case {
  readonly operation: string
  /** What tells apart two cases of one operation. */
  readonly variant?: string
  readonly call: (world: World, targets: Targets) => Call
  readonly statuses: Statuses
}

// dprint-ignore
const cases: ReadonlyArray<Case> = [
  //                                                                                         owner admin member outsider ownKey foreignKey revoked expired anonymous
  { operation: "organizations.listOrganizations", call: () => ({ method: "GET", path: "/v1/organizations" }),
    statuses: [200, 200, 200, 200, 200, 200, 401, 401, 401] },
  { operation: "organizations.createOrganization", call: () => ({ method: "POST", path: "/v1/organizations", json: { name: "New org" } }),
    statuses: [201, 201, 201, 201, 403, 403, 401, 401, 401] },
  { operation: "organizations.getOrganization", call: (w) => ({ method: "GET", path: `/v1/organizations/${w.organizationA}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "organizations.updateOrganization", call: (w) => ({ method: "PATCH", path: `/v1/organizations/${w.organizationA}`, json: { name: "Renamed" } }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "teams.listTeams", call: () => ({ method: "GET", path: "/v1/teams" }),
    statuses: [200, 200, 200, 200, 200, 200, 401, 401, 401] },
  { operation: "teams.listTeams", variant: "of organization A", call: (w) => ({ method: "GET", path: `/v1/teams?organizationId=${w.organizationA}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "teams.createTeam", call: (w) => ({ method: "POST", path: "/v1/teams", json: { organizationId: w.organizationA, name: "New team" } }),
    statuses: [201, 201, 403, 404, 201, 404, 401, 401, 401] },
  { operation: "teams.getTeam", call: (w) => ({ method: "GET", path: `/v1/teams/${w.teamA}` }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "teams.updateTeam", call: (w) => ({ method: "PATCH", path: `/v1/teams/${w.teamA}`, json: { name: "Renamed" } }),
    statuses: [200, 200, 403, 404, 200, 404, 401, 401, 401] },
  { operation: "members.listMembers", call: (w) => ({ method: "GET", path: `/v1/organizations/${w.organizationA}/members` }),
    statuses: [200, 200, 200, 404, 403, 404, 401, 401, 401] },
  { operation: "members.addMember", call: (w, t) => ({ method: "POST", path: `/v1/organizations/${w.organizationA}/members`, json: { email: t.newcomerEmail, role: "member" } }),
    statuses: [201, 201, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "members.updateMember", call: (w, t) => ({ method: "PATCH", path: `/v1/organizations/${w.organizationA}/members/${t.bystanderId}`, json: { role: "admin" } }),
    statuses: [200, 200, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "members.updateMember", variant: "to owner", call: (w, t) => ({ method: "PATCH", path: `/v1/organizations/${w.organizationA}/members/${t.bystanderId}`, json: { role: "owner" } }),
    statuses: [200, 403, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "members.removeMember", call: (w, t) => ({ method: "DELETE", path: `/v1/organizations/${w.organizationA}/members/${t.bystanderId}` }),
    statuses: [200, 200, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "apiKeys.createApiKey", call: (w) => ({ method: "POST", path: `/v1/organizations/${w.organizationA}/api-keys`, json: { name: "New key" } }),
    statuses: [201, 201, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "apiKeys.listApiKeys", call: (w) => ({ method: "GET", path: `/v1/organizations/${w.organizationA}/api-keys` }),
    statuses: [200, 200, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "apiKeys.revokeApiKey", call: (w, t) => ({ method: "DELETE", path: `/v1/organizations/${w.organizationA}/api-keys/${t.spareKeyId}` }),
    statuses: [200, 200, 403, 404, 403, 404, 401, 401, 401] },
  { operation: "agent.getContext", call: () => ({ method: "GET", path: "/v1/agent/context" }),
    statuses: [200, 200, 200, 200, 200, 200, 401, 401, 401] },
  { operation: "agent.setDefaults", call: (w) => ({ method: "PUT", path: "/v1/agent/context/defaults", json: { organizationId: w.organizationA, teamId: w.teamA } }),
    statuses: [200, 200, 200, 404, 200, 404, 401, 401, 401] },
  { operation: "health.health", call: () => ({ method: "GET", path: "/health" }),
    statuses: [200, 200, 200, 200, 200, 200, 200, 200, 200] },
  // The device login hands out tokens: what it answers never depends on the bearer token sent with it.
  { operation: "auth.requestDeviceCode", call: () => ({ method: "POST", path: "/v1/auth/device/code", json: { client_id: "matrix-cli" } }),
    statuses: [200, 200, 200, 200, 200, 200, 200, 200, 200] },
  { operation: "auth.token", call: () => ({ method: "POST", path: "/v1/auth/token", json: { grant_type: "urn:ietf:params:oauth:grant-type:device_code", device_code: "pld_unknown", client_id: "matrix-cli" } }),
    statuses: [400, 400, 400, 400, 400, 400, 400, 400, 400] },
  { operation: "auth.revoke", call: () => ({ method: "POST", path: "/v1/auth/revoke", json: { token: "plr_unknown", client_id: "matrix-cli" } }),
    statuses: [200, 200, 200, 200, 200, 200, 200, 200, 200] }
]

const operationsOfApi = Object.values(PostlineApi.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => `${group.identifier}.${endpoint.name}`)
)

layer(TestServer, { excludeTestServices: true })("access matrix", (it) => {
  it("covers every endpoint of the API", () => {
    expect([...new Set(cases.map((c) => c.operation))].sort()).toEqual([...operationsOfApi].sort())
  })

  for (const { call, operation, statuses, variant } of cases) {
    it.effect(variant ? `${operation} (${variant})` : operation, () =>
      Effect.gen(function*() {
        const world = yield* seedWorld
        for (const [index, caller] of callers.entries()) {
          const request = call(world, yield* world.freshTargets)
          const before = yield* fingerprint
          const token = world.tokens[caller]
          const response = yield* raw({ ...request, ...(token !== undefined ? { token } : {}) })
          const what = `${caller}: ${request.method} ${request.path}`
          expect(response.status, `${what} → ${JSON.stringify(response.body)}`).toBe(statuses[index])
          if (response.status >= 400) {
            const errorKeys = operation.startsWith("auth.") ? ["_tag", "error", "error_description", "message"] : ["_tag", "message"]
            expect(Object.keys(response.body).sort(), what).toEqual(errorKeys)
            expect(yield* fingerprint, `${what} was refused but changed something`).toBe(before)
          } else {
            const text = JSON.stringify(response.body)
            for (const id of world.foreignIds(caller)) expect(text, `${what} shows another organization's ${id}`).not.toContain(id)
          }
        }
      }))
  }
})
