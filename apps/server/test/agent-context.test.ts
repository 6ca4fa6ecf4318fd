import { describe, expect, layer } from "@effect/vitest"
import { HttpServerRequest } from "@effect/platform"
import { SqlClient, Statement } from "@effect/sql"
import type { OrganizationId } from "@postline/domain"
import { Context, Effect, FiberRef, FiberRefs, Layer, Option } from "effect"
import { organizationKeys, teamKeys } from "./support/ResponseFields.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

const contextPath = "/v1/agent/context"

// Every statement run for a request to the context is counted, to show what it costs;
// the server's background work (the scheduler, the workflow engine) is left out.
let statementsRun = 0
const forContextRequest = (fiberRefs: FiberRefs.FiberRefs) =>
  Option.exists(
    Context.getOption(FiberRefs.getOrDefault(fiberRefs, FiberRef.currentContext), HttpServerRequest.HttpServerRequest),
    (request) => request.url === contextPath
  )
const CountingTestServer = TestServer.pipe(
  Layer.provide(Statement.setTransformer((statement, _sql, fiberRefs) =>
    Effect.sync(() => {
      if (forContextRequest(fiberRefs)) statementsRun++
      return statement
    })
  ))
)
const defaultsPath = "/v1/agent/context/defaults"


type User = Effect.Effect.Success<ReturnType<typeof signUp>>

const getContext = (token: string) => raw({ method: "GET", path: contextPath, token })
const putDefaults = (token: string, json: unknown) => raw({ method: "PUT", path: defaultsPath, token, json })
const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((item) => item.id)

// Timestamps keep milliseconds: a pause keeps "created before" and "joined before" strict.
const pause = Effect.sleep("5 millis")

const createOrganization = (owner: User, name: string) =>
  Effect.zipLeft(owner.client.organizations.createOrganization({ payload: { name } }), pause)

const createTeam = (owner: User, organizationId: OrganizationId, name: string) =>
  Effect.zipLeft(owner.client.teams.createTeam({ payload: { organizationId, name } }), pause)

const addMember = (admin: User, organizationId: OrganizationId, member: User) =>
  Effect.zipLeft(
    admin.client.members.addMember({ path: { organizationId }, payload: { email: member.user.email, role: "member" } }),
    pause
  )

/** Organizations made straight in the database, joined by the user a second apart from `second` on; their ids in joined order. */
const joinMany = (userId: string, count: number, second = 0) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const created = yield* sql<{ id: OrganizationId }>`INSERT INTO organizations (name)
      SELECT 'Org ' || g FROM generate_series(1, ${count}) g RETURNING id`
    const joined = created.map(({ id }, index) =>
      sql`(${userId}, ${id}, 'member', now() + ${second + index}::int * interval '1 second')`
    )
    yield* sql`INSERT INTO memberships (user_id, organization_id, role, created_at) VALUES ${sql.csv(joined)}`
    return created.map(({ id }) => id)
  })

const savedDefaultsOf = (column: "user_id" | "api_key_id", id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`SELECT organization_id AS "organizationId", team_id AS "teamId" FROM agent_defaults WHERE ${sql(column)} = ${id}`)

/**
 * Carol's organization "Old" is created first, with its team; Alice then
 * creates "Mine" with two teams, and only afterwards joins "Old": she joined
 * "Mine" first though "Old" is older, and Old's team is the oldest of all.
 */
const aliceInTwoOrganizations = Effect.gen(function*() {
  const carol = yield* signUp("Carol")
  const old = yield* createOrganization(carol, "Old")
  const oldTeam = yield* createTeam(carol, old.id, "Old team")
  const alice = yield* signUp("Alice")
  const mine = yield* createOrganization(alice, "Mine")
  const first = yield* createTeam(alice, mine.id, "First")
  const second = yield* createTeam(alice, mine.id, "Second")
  yield* addMember(carol, old.id, alice)
  return { alice, carol, old, oldTeam, mine, first, second }
})

layer(CountingTestServer, { excludeTestServices: true })("agent context", (it) => {
  describe("GET /v1/agent/context", () => {
    it.effect("answers exactly user, organizations, teams and defaults, in the contract's shapes", () =>
      Effect.gen(function*() {
        const { alice, mine, first, old, oldTeam } = yield* aliceInTwoOrganizations
        const response = yield* getContext(alice.token)
        expect(response.status).toBe(200)
        expect(response.contentType).toMatch(/^application\/json/)
        const body = response.body
        expect(Object.keys(body)).toEqual(["user", "organizations", "teams", "defaults"])
        expect(body.user).toEqual({ id: alice.user.id, email: alice.user.email, name: "Alice" })
        expect(Object.keys(body.organizations).sort()).toEqual(["data", "hasMore"])
        expect(Object.keys(body.teams).sort()).toEqual(["data", "hasMore"])
        expect(Object.keys(body.defaults).sort()).toEqual(["organizationId", "teamId"])
        for (const organization of body.organizations.data) expect(Object.keys(organization).sort()).toEqual(organizationKeys)
        for (const team of body.teams.data) expect(Object.keys(team).sort()).toEqual(teamKeys)
        // The same objects as the organizations and teams endpoints answer.
        expect(body.organizations.data).toEqual([mine, old])
        expect(body.teams.data[0]).toEqual(oldTeam)
        expect(body.teams.data[1]).toEqual(first)
        // The typed client decodes it with the full schema.
        const typed = yield* alice.client.agent.getContext()
        expect(typed).toEqual(body)
      }))

    it.effect("gives a user without organizations empty lists and null defaults", () =>
      Effect.gen(function*() {
        const loner = yield* signUp("Loner")
        const response = yield* getContext(loner.token)
        expect(response.status).toBe(200)
        expect(response.body).toEqual({
          user: { id: loner.user.id, email: loner.user.email, name: "Loner" },
          organizations: { data: [], hasMore: false },
          teams: { data: [], hasMore: false },
          defaults: { organizationId: null, teamId: null }
        })
      }))

    it.effect("lists organizations in the order joined and teams oldest first; defaults are the organization joined first and its oldest team", () =>
      Effect.gen(function*() {
        const { alice, first, mine, old, oldTeam, second } = yield* aliceInTwoOrganizations
        const context = yield* alice.client.agent.getContext()
        expect(ids(context.organizations.data)).toEqual([mine.id, old.id])
        expect(ids(context.teams.data)).toEqual([oldTeam.id, first.id, second.id])
        expect(context.organizations.hasMore).toBe(false)
        expect(context.teams.hasMore).toBe(false)
        expect(context.defaults).toEqual({ organizationId: mine.id, teamId: first.id })
      }))

    it.effect("gives null for the default team of an organization without teams", () =>
      Effect.gen(function*() {
        const alice = yield* signUp("Alice")
        const bare = yield* createOrganization(alice, "Bare")
        const context = yield* alice.client.agent.getContext()
        expect(context.defaults).toEqual({ organizationId: bare.id, teamId: null })
      }))

    it.effect("never shows another organization's data", () =>
      Effect.gen(function*() {
        const { alice, carol, mine, old } = yield* aliceInTwoOrganizations
        const stranger = yield* signUp("Stranger")
        const hidden = yield* createOrganization(stranger, "Hidden")
        const hiddenTeam = yield* createTeam(stranger, hidden.id, "Hidden team")
        const carolsOwn = yield* createOrganization(carol, "Carol's own")
        yield* createTeam(carol, carolsOwn.id, "Carol's team")

        const context = yield* alice.client.agent.getContext()
        expect(ids(context.organizations.data).sort()).toEqual([mine.id, old.id].sort())
        expect(context.teams.data.every((team) => [mine.id, old.id].includes(team.organizationId))).toBe(true)
        const strangers = yield* stranger.client.agent.getContext()
        expect(ids(strangers.organizations.data)).toEqual([hidden.id])
        expect(ids(strangers.teams.data)).toEqual([hiddenTeam.id])
        expect(strangers.defaults).toEqual({ organizationId: hidden.id, teamId: hiddenTeam.id })
      }))

    it.effect("lists the first 100 organizations and teams, with hasMore once there are more", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const many = yield* signUp("Many")
        const joined = yield* joinMany(many.user.id, 100)
        yield* sql`INSERT INTO teams (organization_id, name, created_at)
          SELECT ${joined[0]}::uuid, 'Team ' || g, now() + g * interval '1 millisecond' FROM generate_series(1, 100) g`

        const full = yield* many.client.agent.getContext()
        expect(full.organizations.data).toHaveLength(100)
        expect(full.organizations.hasMore).toBe(false)
        expect(ids(full.organizations.data)).toEqual(joined)
        expect(full.teams.data.map((team) => team.name)).toEqual(Array.from({ length: 100 }, (_, i) => `Team ${i + 1}`))
        expect(full.teams.hasMore).toBe(false)
        expect(full.defaults).toEqual({ organizationId: joined[0], teamId: full.teams.data[0].id })

        yield* joinMany(many.user.id, 5, 1000)
        yield* sql`INSERT INTO teams (organization_id, name, created_at) VALUES (${joined[1]}, 'Newest', now() + interval '1 day')`
        const more = yield* many.client.agent.getContext()
        expect(more.organizations.data).toHaveLength(100)
        expect(more.organizations.hasMore).toBe(true)
        expect(ids(more.organizations.data)).toEqual(joined)
        expect(more.teams.data).toHaveLength(100)
        expect(more.teams.hasMore).toBe(true)
        expect(ids(more.teams.data)).toEqual(ids(full.teams.data))
        expect(more.defaults.organizationId).toBe(joined[0])
      }))

    it.effect("costs the same few statements for one organization as for 150", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const alice = yield* signUp("Alice")
        const mine = yield* createOrganization(alice, "Mine")
        yield* createTeam(alice, mine.id, "Team")
        const statementsOf = (token: string) =>
          Effect.gen(function*() {
            const before = statementsRun
            expect((yield* getContext(token)).status).toBe(200)
            return statementsRun - before
          })
        const small = yield* statementsOf(alice.token)
        yield* joinMany(alice.user.id, 150, 10)
        yield* sql`INSERT INTO teams (organization_id, name)
          SELECT organization_id, 'Team' FROM memberships WHERE user_id = ${alice.user.id}`
        const large = yield* statementsOf(alice.token)
        expect((yield* alice.client.agent.getContext()).organizations.hasMore).toBe(true)
        // The caller's token, then the organizations, the teams and the defaults.
        expect(small).toBe(4)
        expect(large).toBe(small)
      }))

    it.effect("gives 401 without valid credentials", () =>
      Effect.gen(function*() {
        const missing = yield* raw({ method: "GET", path: contextPath })
        expect(missing.status).toBe(401)
        expect(missing.body._tag).toBe("Unauthorized")
        expect((yield* getContext("plt_not-a-token")).status).toBe(401)
        const put = yield* raw({ method: "PUT", path: defaultsPath, json: { organizationId: crypto.randomUUID(), teamId: null } })
        expect(put.status).toBe(401)
      }))
  })

  describe("PUT /v1/agent/context/defaults", () => {
    it.effect("saves the choice, answers exactly it, and the context returns it", () =>
      Effect.gen(function*() {
        const { alice, old, oldTeam } = yield* aliceInTwoOrganizations
        const response = yield* putDefaults(alice.token, { organizationId: old.id.toUpperCase(), teamId: oldTeam.id })
        expect(response.status).toBe(200)
        expect(response.body).toEqual({ organizationId: old.id, teamId: oldTeam.id })
        expect((yield* alice.client.agent.getContext()).defaults).toEqual({ organizationId: old.id, teamId: oldTeam.id })
      }))

    it.effect("replaces an earlier choice; a null team stands for the organization's oldest", () =>
      Effect.gen(function*() {
        const { alice, first, mine, old, oldTeam } = yield* aliceInTwoOrganizations
        yield* alice.client.agent.setDefaults({ payload: { organizationId: old.id, teamId: oldTeam.id } })
        const saved = yield* alice.client.agent.setDefaults({ payload: { organizationId: mine.id, teamId: null } })
        expect(saved).toEqual({ organizationId: mine.id, teamId: null })
        expect(yield* savedDefaultsOf("user_id", alice.user.id)).toEqual([{ organizationId: mine.id, teamId: null }])
        expect((yield* alice.client.agent.getContext()).defaults).toEqual({ organizationId: mine.id, teamId: first.id })
      }))

    it.effect("gives 404 for an organization or team the caller cannot see, and saves nothing", () =>
      Effect.gen(function*() {
        const { alice, first, mine } = yield* aliceInTwoOrganizations
        const stranger = yield* signUp("Stranger")
        const hidden = yield* createOrganization(stranger, "Hidden")
        const hiddenTeam = yield* createTeam(stranger, hidden.id, "Hidden team")
        for (
          const [json, message] of [
            [{ organizationId: hidden.id, teamId: null }, `Organization ${hidden.id} not found`],
            [{ organizationId: hidden.id, teamId: hiddenTeam.id }, `Team ${hiddenTeam.id} not found`],
            [{ organizationId: mine.id, teamId: hiddenTeam.id }, `Team ${hiddenTeam.id} not found`],
            [{ organizationId: hidden.id, teamId: first.id }, `Organization ${hidden.id} not found`]
          ] as const
        ) {
          const response = yield* putDefaults(alice.token, json)
          expect(response.status, JSON.stringify(json)).toBe(404)
          expect(response.body).toEqual({ _tag: "NotFound", message })
        }
        const unknown = crypto.randomUUID()
        expect((yield* putDefaults(alice.token, { organizationId: unknown, teamId: null })).status).toBe(404)
        expect(yield* savedDefaultsOf("user_id", alice.user.id)).toEqual([])
        expect((yield* alice.client.agent.getContext()).defaults).toEqual({ organizationId: mine.id, teamId: first.id })
      }))

    it.effect("gives 400 for a team of another organization, and saves nothing", () =>
      Effect.gen(function*() {
        const { alice, mine, oldTeam } = yield* aliceInTwoOrganizations
        const response = yield* putDefaults(alice.token, { organizationId: mine.id, teamId: oldTeam.id })
        expect(response.status).toBe(400)
        expect(response.body).toEqual({
          _tag: "BadRequest",
          reason: "team_not_in_organization",
          message: `Team ${oldTeam.id} is not a team of organization ${mine.id}`
        })
        expect(yield* savedDefaultsOf("user_id", alice.user.id)).toEqual([])
      }))

    it.effect("refuses bodies that are not exactly { organizationId, teamId }", () =>
      Effect.gen(function*() {
        const { alice, mine } = yield* aliceInTwoOrganizations
        for (
          const json of [
            { organizationId: mine.id },
            { teamId: null },
            { organizationId: "not-a-uuid", teamId: null },
            { organizationId: mine.id, teamId: null, extra: true }
          ]
        ) {
          const response = yield* putDefaults(alice.token, json)
          expect(response.status, JSON.stringify(json)).toBe(400)
          expect(response.body._tag).toBe("HttpApiDecodeError")
        }
        expect(yield* savedDefaultsOf("user_id", alice.user.id)).toEqual([])
      }))

    it.effect("falls back once the saved choice is no longer accessible", () =>
      Effect.gen(function*() {
        const { alice, carol, first, mine, old, oldTeam, second } = yield* aliceInTwoOrganizations
        const sql = yield* SqlClient.SqlClient
        yield* alice.client.agent.setDefaults({ payload: { organizationId: mine.id, teamId: second.id } })
        // A deleted team leaves its organization saved: the organization's oldest team stands in.
        yield* sql`DELETE FROM teams WHERE id = ${second.id}`
        expect((yield* alice.client.agent.getContext()).defaults).toEqual({ organizationId: mine.id, teamId: first.id })

        yield* alice.client.agent.setDefaults({ payload: { organizationId: old.id, teamId: oldTeam.id } })
        yield* carol.client.members.removeMember({ path: { organizationId: old.id, userId: alice.user.id } })
        const context = yield* alice.client.agent.getContext()
        expect(ids(context.organizations.data)).toEqual([mine.id])
        expect(context.defaults).toEqual({ organizationId: mine.id, teamId: first.id })
      }))
  })

  describe("with an API key", () => {
    it.effect("sees no user, its organization and that organization's teams, and its own defaults", () =>
      Effect.gen(function*() {
        const { alice, first, mine, old, second } = yield* aliceInTwoOrganizations
        const { id: apiKeyId, key } = yield* alice.client.apiKeys.createApiKey({
          path: { organizationId: mine.id },
          payload: { name: "Agent" }
        })

        const context = yield* getContext(key)
        expect(context.status).toBe(200)
        expect(Object.keys(context.body)).toEqual(["user", "organizations", "teams", "defaults"])
        expect(context.body.user).toBeNull()
        expect(ids(context.body.organizations.data)).toEqual([mine.id])
        expect(ids(context.body.teams.data)).toEqual([first.id, second.id])
        expect(context.body.defaults).toEqual({ organizationId: mine.id, teamId: first.id })

        const saved = yield* putDefaults(key, { organizationId: mine.id, teamId: second.id })
        expect(saved.status).toBe(200)
        expect(saved.body).toEqual({ organizationId: mine.id, teamId: second.id })
        expect((yield* getContext(key)).body.defaults).toEqual({ organizationId: mine.id, teamId: second.id })
        expect(yield* savedDefaultsOf("api_key_id", apiKeyId)).toEqual([{ organizationId: mine.id, teamId: second.id }])
        // The key's choice is its own: the user who created it keeps theirs.
        expect(yield* savedDefaultsOf("user_id", alice.user.id)).toEqual([])
        expect((yield* alice.client.agent.getContext()).defaults).toEqual({ organizationId: mine.id, teamId: first.id })

        // Its creator's other organization is not the key's.
        const elsewhere = yield* putDefaults(key, { organizationId: old.id, teamId: null })
        expect(elsewhere.status).toBe(404)
        expect((yield* getContext(key)).body.defaults).toEqual({ organizationId: mine.id, teamId: second.id })
      }))
  })
})
