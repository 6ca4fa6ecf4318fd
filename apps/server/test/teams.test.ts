import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { teamKeys } from "./support/ResponseFields.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

/** A user with an organization they administer. */
/** `PLAN_LINK_TRACKING_DEFAULT`, unset in the tests. */
const planLinkTracking = true

const adminWithOrganization = Effect.gen(function*() {
  const admin = yield* signUp()
  const organization = yield* admin.client.organizations.createOrganization({ payload: { name: "Acme" } })
  return { ...admin, organization }
})

const addMember = (userId: string, organizationId: string, role: "owner" | "admin" | "member") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${userId}, ${organizationId}, ${role})`)

layer(TestServer, { excludeTestServices: true })("teams", (it) => {
  describe("create", () => {
    it.effect("returns 201 with exactly the Team fields, the plan default for link tracking", () =>
      Effect.gen(function*() {
        const { organization, token } = yield* adminWithOrganization
        const response = yield* raw({
          method: "POST",
          path: "/v1/teams",
          token,
          json: { organizationId: organization.id, name: "Marketing" }
        })
        expect(response.status).toBe(201)
        expect(Object.keys(response.body).sort()).toEqual(teamKeys)
        expect(response.body).toMatchObject({
          organizationId: organization.id,
          name: "Marketing",
          website: null,
          timezone: null,
          linkTrackingDefault: planLinkTracking
        })
      }))

    it.effect("stores website, timezone and a link-tracking override given at creation", () =>
      Effect.gen(function*() {
        const { client, organization } = yield* adminWithOrganization
        const team = yield* client.teams.createTeam({
          payload: {
            organizationId: organization.id,
            name: "Sales",
            website: "https://acme.example/sales",
            timezone: "Europe/Paris",
            linkTrackingDefault: !planLinkTracking
          }
        })
        expect(team).toMatchObject({
          website: "https://acme.example/sales",
          timezone: "Europe/Paris",
          linkTrackingDefault: !planLinkTracking
        })
        expect(yield* client.teams.getTeam({ path: { teamId: team.id } })).toEqual(team)
      }))

    it.effect("rejects extra properties and bad fields with 400 and creates nothing", () =>
      Effect.gen(function*() {
        const { client, organization, token } = yield* adminWithOrganization
        for (
          const json of [
            { organizationId: organization.id, name: "T", extra: true },
            { organizationId: organization.id, name: "x" },
            { organizationId: organization.id, name: "Team", website: "ftp://acme.example" },
            { organizationId: organization.id, name: "Team", timezone: "Mars/Olympus" },
            { organizationId: organization.id, name: "Te\u0000am" },
            { organizationId: "nope", name: "Team" },
            { name: "Team" }
          ]
        ) {
          const response = yield* raw({ method: "POST", path: "/v1/teams", token, json })
          expect(response.status, JSON.stringify(json)).toBe(400)
          expect(response.body._tag).toBe("HttpApiDecodeError")
        }
        const list = yield* client.teams.listTeams({ urlParams: {} })
        expect(list.total).toBe(0)
      }))

    it.effect("gives 404 in an organization the caller does not belong to and 403 to a plain member", () =>
      Effect.gen(function*() {
        const { organization } = yield* adminWithOrganization
        const stranger = yield* signUp()
        const member = yield* signUp()
        yield* addMember(member.user.id, organization.id, "member")
        const json = { organizationId: organization.id, name: "Team" }
        const asStranger = yield* raw({ method: "POST", path: "/v1/teams", token: stranger.token, json })
        expect(asStranger.status).toBe(404)
        expect(asStranger.body._tag).toBe("NotFound")
        const asMember = yield* raw({ method: "POST", path: "/v1/teams", token: member.token, json })
        expect(asMember.status).toBe(403)
        expect(asMember.body._tag).toBe("Forbidden")
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT id FROM teams WHERE organization_id = ${organization.id}`).toEqual([])
      }))
  })

  describe("update", () => {
    it.effect("changes each field and returns the Team; null clears website and timezone", () =>
      Effect.gen(function*() {
        const { client, organization, token } = yield* adminWithOrganization
        const team = yield* client.teams.createTeam({ payload: { organizationId: organization.id, name: "Team" } })
        const patch = (json: unknown) => raw({ method: "PATCH", path: `/v1/teams/${team.id}`, token, json })

        const website = "https://acme.example:8443/Brand/?q=1#Top"
        const renamed = yield* patch({ name: "Renamed", website, timezone: "America/New_York" })
        expect(renamed.status).toBe(200)
        expect(Object.keys(renamed.body).sort()).toEqual(teamKeys)
        expect(renamed.body).toMatchObject({ name: "Renamed", website, timezone: "America/New_York" })
        expect(renamed.body.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
        expect(renamed.body.updatedAt > team.updatedAt || renamed.body.updatedAt === team.updatedAt).toBe(true)

        const cleared = yield* patch({ website: null, timezone: null })
        expect(cleared.body).toMatchObject({ name: "Renamed", website: null, timezone: null })
        const empty = yield* patch({})
        expect(empty.status).toBe(200)
        expect(empty.body).toEqual(cleared.body)
      }))

    it.effect("keeps a link-tracking override until null resets it to the plan default", () =>
      Effect.gen(function*() {
        const { client, organization } = yield* adminWithOrganization
        const team = yield* client.teams.createTeam({ payload: { organizationId: organization.id, name: "Team" } })
        const update = (linkTrackingDefault: boolean | null) =>
          client.teams.updateTeam({ path: { teamId: team.id }, payload: { linkTrackingDefault } })
        expect((yield* update(!planLinkTracking)).linkTrackingDefault).toBe(!planLinkTracking)
        expect((yield* client.teams.updateTeam({ path: { teamId: team.id }, payload: { name: "Still" } })).linkTrackingDefault)
          .toBe(!planLinkTracking)
        expect((yield* update(null)).linkTrackingDefault).toBe(planLinkTracking)
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT link_tracking_override FROM teams WHERE id = ${team.id}`).toEqual([
          { link_tracking_override: null }
        ])
      }))

    it.effect.each([
      "Asia/Kolkata",
      "Asia/Calcutta",
      "Europe/Kyiv",
      "America/Argentina/Buenos_Aires",
      "UTC",
      "Etc/UTC",
      ...Intl.supportedValuesOf("timeZone").slice(0, 3)
    ])("accepts the timezone %s and stores it as sent", (timezone) =>
      Effect.gen(function*() {
        const { client, organization } = yield* adminWithOrganization
        const team = yield* client.teams.createTeam({ payload: { organizationId: organization.id, name: "Team" } })
        const updated = yield* client.teams.updateTeam({ path: { teamId: team.id }, payload: { timezone } })
        expect(updated.timezone).toBe(timezone)
      }))

    it.effect.each([
      "Mars/Olympus",
      "asia/kolkata",
      "Asia/KOLKATA",
      "Europe/PARIS",
      "US/Eastern",
      "EST",
      "GMT+5",
      "Etc/GMT+5",
      "",
      "Europe",
      "Europe/Paris\u0000"
    ])(
      "rejects the timezone %j with 400 and changes nothing",
      (timezone) =>
        Effect.gen(function*() {
          const { client, organization, token } = yield* adminWithOrganization
          const team = yield* client.teams.createTeam({
            payload: { organizationId: organization.id, name: "Team", timezone: "Europe/Paris" }
          })
          const response = yield* raw({ method: "PATCH", path: `/v1/teams/${team.id}`, token, json: { timezone } })
          expect(response.status).toBe(400)
          expect(response.body._tag).toBe("HttpApiDecodeError")
          expect(response.body.issues).toEqual([
            { path: ["timezone"], message: "must be an IANA timezone name supported by the server, or null" }
          ])
          expect((yield* client.teams.getTeam({ path: { teamId: team.id } })).timezone).toBe("Europe/Paris")
        })
    )

    it.effect.each([
      ["a relative URL", { website: "/about" }, ["website"]],
      ["a javascript: URL", { website: "javascript:alert(1)" }, ["website"]],
      ["a URL without slashes", { website: "https:example.com" }, ["website"]],
      ["a URL with one slash", { website: "http:/example.com" }, ["website"]],
      ["a URL with spaces around it", { website: " https://example.com " }, ["website"]],
      ["a URL with a newline", { website: "https://exa\nmple.com" }, ["website"]],
      ["a URL with a NUL character", { website: "https://example.com/\u0000" }, ["website"]],
      ["a URL without a host", { website: "http://" }, ["website"]],
      ["a URL longer than 2048 characters", { website: `https://example.com/${"a".repeat(2030)}` }, ["website"]],
      ["a non-boolean linkTrackingDefault", { linkTrackingDefault: "yes" }, ["linkTrackingDefault"]],
      ["a 65-character name", { name: "n".repeat(65) }, ["name"]],
      ["organizationId (not updatable)", { organizationId: crypto.randomUUID() }, ["organizationId"]],
      ["a server-owned field", { createdAt: "2020-01-01T00:00:00.000Z" }, ["createdAt"]]
    ])("rejects %s with 400", ([, json, path]) =>
      Effect.gen(function*() {
        const { client, organization, token } = yield* adminWithOrganization
        const team = yield* client.teams.createTeam({ payload: { organizationId: organization.id, name: "Team" } })
        const response = yield* raw({ method: "PATCH", path: `/v1/teams/${team.id}`, token, json })
        expect(response.status).toBe(400)
        expect(response.body.issues.map((issue: any) => issue.path)).toContainEqual(path)
        expect(yield* client.teams.getTeam({ path: { teamId: team.id } })).toEqual(team)
      }))

    it.effect("gives 404 to a stranger, 403 to a member, and lets an owner update", () =>
      Effect.gen(function*() {
        const { client, organization } = yield* adminWithOrganization
        const team = yield* client.teams.createTeam({ payload: { organizationId: organization.id, name: "Team" } })
        const stranger = yield* signUp()
        const member = yield* signUp()
        const owner = yield* signUp()
        yield* addMember(member.user.id, organization.id, "member")
        yield* addMember(owner.user.id, organization.id, "owner")
        const json = { name: "Changed" }

        const asStranger = yield* raw({ method: "PATCH", path: `/v1/teams/${team.id}`, token: stranger.token, json })
        expect(asStranger.status).toBe(404)
        expect(asStranger.body).toEqual({ _tag: "NotFound", message: `Team ${team.id} not found` })
        const strangerGet = yield* raw({ method: "GET", path: `/v1/teams/${team.id}`, token: stranger.token })
        expect(strangerGet.status).toBe(404)
        const missing = yield* raw({ method: "GET", path: `/v1/teams/${crypto.randomUUID()}`, token: stranger.token })
        expect(missing.status).toBe(404)

        const asMember = yield* raw({ method: "PATCH", path: `/v1/teams/${team.id}`, token: member.token, json })
        expect(asMember.status).toBe(403)
        expect(asMember.body._tag).toBe("Forbidden")
        expect((yield* member.client.teams.getTeam({ path: { teamId: team.id } })).name).toBe("Team")

        const byOwner = yield* owner.client.teams.updateTeam({ path: { teamId: team.id }, payload: json })
        expect(byOwner.name).toBe("Changed")
        const created = yield* owner.client.teams.createTeam({ payload: { organizationId: organization.id, name: "Owner's" } })
        expect(created.organizationId).toBe(organization.id)
      }))
  })

  describe("list", () => {
    it.effect("lists every team of the caller's organizations, or those of one, never a stranger's", () =>
      Effect.gen(function*() {
        const alice = yield* adminWithOrganization
        const second = yield* alice.client.organizations.createOrganization({ payload: { name: "Second" } })
        const bob = yield* adminWithOrganization
        const create = (organizationId: typeof second.id, name: string) =>
          alice.client.teams.createTeam({ payload: { organizationId, name } })
        const a1 = yield* create(alice.organization.id, "A1")
        const a2 = yield* create(alice.organization.id, "A2")
        const s1 = yield* create(second.id, "S1")
        yield* bob.client.teams.createTeam({ payload: { organizationId: bob.organization.id, name: "Bob's" } })

        const all = yield* alice.client.teams.listTeams({ urlParams: {} })
        expect(all.data.map((team) => team.id).sort()).toEqual([a1.id, a2.id, s1.id].sort())
        expect(all.total).toBe(3)
        for (const team of all.data) expect(Object.keys(team).sort()).toEqual(teamKeys)

        const ofFirst = yield* alice.client.teams.listTeams({ urlParams: { organizationId: alice.organization.id } })
        expect(ofFirst.data.map((team) => team.id).sort()).toEqual([a1.id, a2.id].sort())
        expect(ofFirst).toMatchObject({ total: 2, nextCursor: null, prevCursor: null })

        const foreign = yield* raw({
          method: "GET",
          path: `/v1/teams?organizationId=${bob.organization.id}`,
          token: alice.token
        })
        expect(foreign.status).toBe(404)
        expect(foreign.body._tag).toBe("NotFound")
        const unknown = yield* raw({ method: "GET", path: `/v1/teams?organizationId=${crypto.randomUUID()}`, token: alice.token })
        expect(unknown.status).toBe(404)
        const malformed = yield* raw({ method: "GET", path: "/v1/teams?organizationId=xyz", token: alice.token })
        expect(malformed.status).toBe(400)
        expect(malformed.body.issues[0].path).toEqual(["organizationId"])
      }))

    it.effect("lets a plain member list and read but not change", () =>
      Effect.gen(function*() {
        const { client, organization } = yield* adminWithOrganization
        const team = yield* client.teams.createTeam({ payload: { organizationId: organization.id, name: "Team" } })
        const member = yield* signUp()
        yield* addMember(member.user.id, organization.id, "member")
        const list = yield* member.client.teams.listTeams({ urlParams: { organizationId: organization.id } })
        expect(list.data).toEqual([team])
      }))
  })
})
