import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import type { SortField } from "@postline/domain"
import { Effect } from "effect"
import { raw, signUp, TestServer } from "./support/TestServer.js"

const sortFields: ReadonlyArray<SortField> = ["createdAt", "updatedAt", "name"]
const sortOrders = ["asc", "desc"] as const

interface Keyed {
  readonly id: string
  readonly createdAt: string
  readonly updatedAt: string
  readonly name: string
}

/** The order the contract promises: by the field, ties broken by id. */
const expectedOrder = <A extends Keyed>(items: ReadonlyArray<A>, sortBy: SortField, sortOrder: "asc" | "desc") => {
  const sign = sortOrder === "asc" ? 1 : -1
  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)
  return [...items].sort((a, b) => sign * (compare(a[sortBy], b[sortBy]) || compare(a.id, b.id))).map((item) => item.id)
}

/**
 * Organizations for one user with many ties: 250 rows over 40 creation times,
 * 90 update times and 70 names (lower-case ASCII of one length, so every collation agrees).
 */
const seedOrganizations = (userId: string, count: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`
      WITH created AS (
        INSERT INTO organizations (name, created_at, updated_at)
        SELECT 'org' || lpad(((n * 37) % 70)::text, 3, '0'),
               timestamptz '2026-01-01T00:00:00Z' + ((n * 13) % 40) * interval '1 minute',
               timestamptz '2026-06-01T00:00:00Z' + ((n * 29) % 90) * interval '1 second' + interval '0.123 second'
        FROM generate_series(1, ${count}) AS n
        RETURNING id
      )
      INSERT INTO memberships (user_id, organization_id, role) SELECT ${userId}, id, 'member' FROM created`
  })

const listPath = (query: Record<string, string>) => `/v1/organizations?${new URLSearchParams(query)}`

layer(TestServer, { excludeTestServices: true })("pagination", (it) => {
  it.effect("pages through 250 organizations forwards and backwards with every sort", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      const bob = yield* signUp()
      yield* seedOrganizations(alice.user.id, 250)
      yield* seedOrganizations(bob.user.id, 30)

      const sql = yield* SqlClient.SqlClient
      const stored = yield* sql<Keyed>`
        SELECT o.id, o.name,
          to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt",
          to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "updatedAt"
        FROM organizations o JOIN memberships m ON m.organization_id = o.id WHERE m.user_id = ${alice.user.id}`
      expect(stored.length).toBe(250)

      for (const sortBy of sortFields) {
        for (const sortOrder of sortOrders) {
          const label = `${sortBy} ${sortOrder}`
          const list = (cursor?: string) =>
            alice.client.organizations.listOrganizations({
              urlParams: { sortBy, sortOrder, limit: 25, ...(cursor !== undefined ? { cursor } : {}) }
            })

          const forward = [yield* list()]
          expect(forward[0].prevCursor, label).toBeNull()
          while (forward[forward.length - 1].nextCursor !== null) {
            forward.push(yield* list(forward[forward.length - 1].nextCursor!))
          }
          expect(forward.length, label).toBe(10)
          for (const page of forward) {
            expect(page.data.length, label).toBe(25)
            expect(page.total, label).toBe(250)
          }
          const seen = forward.flatMap((page) => page.data)
          expect(seen.map((org) => org.id), label).toEqual(expectedOrder(stored, sortBy, sortOrder))

          // Walking back with prevCursor yields exactly the forward pages, in reverse.
          let page = forward[forward.length - 1]
          for (let index = forward.length - 2; index >= 0; index--) {
            expect(page.prevCursor, `${label} page ${index + 1}`).not.toBeNull()
            page = yield* list(page.prevCursor!)
            expect(page.data.map((org) => org.id), `${label} page ${index}`).toEqual(forward[index].data.map((org) => org.id))
            expect(page.nextCursor, label).not.toBeNull()
          }
          expect(page.prevCursor, label).toBeNull()
        }
      }
    }))

  it.effect("returns the default page of 25 sorted by createdAt desc, and caps the limit at 100", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      yield* seedOrganizations(alice.user.id, 130)
      const all = yield* alice.client.organizations.listOrganizations({ urlParams: { limit: 100 } })
      const defaultPage = yield* alice.client.organizations.listOrganizations({ urlParams: {} })
      expect(defaultPage.data.length).toBe(25)
      expect(defaultPage.data).toEqual(all.data.slice(0, 25))
      const full = [...all.data]
      let next = all.nextCursor
      while (next !== null) {
        const page = yield* alice.client.organizations.listOrganizations({ urlParams: { limit: 100, cursor: next } })
        full.push(...page.data)
        next = page.nextCursor
      }
      expect(defaultPage.data.map((org) => org.id)).toEqual(expectedOrder(full, "createdAt", "desc").slice(0, 25))

      for (
        const [limit, size] of [
          ["1", 1],
          ["100", 100],
          ["101", 100],
          ["1000", 100],
          ["99999999999999999999", 100],
          ["0025", 25]
        ] as const
      ) {
        const response = yield* raw({ method: "GET", path: listPath({ limit }), token: alice.token })
        expect(response.status, limit).toBe(200)
        expect(response.body.data.length, limit).toBe(size)
      }
    }))

  it.effect.each<[string, Record<string, string>, Array<string>]>([
    ["limit=0", { limit: "0" }, ["limit"]],
    ["limit=-1", { limit: "-1" }, ["limit"]],
    ["limit=1.5", { limit: "1.5" }, ["limit"]],
    ["limit=abc", { limit: "abc" }, ["limit"]],
    ["limit=1e2", { limit: "1e2" }, ["limit"]],
    ["empty limit", { limit: "" }, ["limit"]],
    ["sortBy=id", { sortBy: "id" }, ["sortBy"]],
    ["sortBy=creditsBalance", { sortBy: "creditsBalance" }, ["sortBy"]],
    ["sortOrder=up", { sortOrder: "up" }, ["sortOrder"]],
    ["an unknown parameter", { page: "2" }, ["page"]],
    ["limit=0000", { limit: "0000" }, ["limit"]]
  ])("rejects %s with 400 HttpApiDecodeError", ([, query, path]) =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      for (const target of ["/v1/organizations", "/v1/teams"]) {
        const response = yield* raw({ method: "GET", path: `${target}?${new URLSearchParams(query)}`, token: alice.token })
        expect(response.status).toBe(400)
        expect(response.body._tag).toBe("HttpApiDecodeError")
        expect(response.body.issues.map((issue: any) => issue.path)).toEqual([path])
      }
    }))

  it.effect("rejects a tampered cursor, a foreign string and a cursor of another sort with 400 BadRequest", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      yield* seedOrganizations(alice.user.id, 30)
      const first = yield* alice.client.organizations.listOrganizations({ urlParams: { limit: 10, sortBy: "name" } })
      const cursor = first.nextCursor!
      const [body, sum] = cursor.split(".")
      const flipped = body.slice(0, 5) + (body[5] === "A" ? "B" : "A") + body.slice(6)
      const forged = Buffer.from(
        JSON.stringify({ ...JSON.parse(Buffer.from(body, "base64url").toString()), sortBy: "createdAt" })
      ).toString("base64url")
      for (
        const [label, query, reason] of [
          ["tampered", { sortBy: "name", cursor: `${flipped}.${sum}` }, "invalid_cursor"],
          ["forged without checksum", { cursor: `${forged}.${sum}` }, "invalid_cursor"],
          ["garbage", { cursor: "abc" }, "invalid_cursor"],
          ["empty", { cursor: "" }, "invalid_cursor"],
          ["another sortBy", { sortBy: "createdAt", cursor }, "cursor_sort_mismatch"],
          ["another sortOrder", { sortBy: "name", sortOrder: "asc", cursor }, "cursor_sort_mismatch"]
        ] as const
      ) {
        const response = yield* raw({ method: "GET", path: listPath(query), token: alice.token })
        expect(response.status, label).toBe(400)
        expect(response.body, label).toEqual({ _tag: "BadRequest", reason, message: expect.stringMatching(/cursor/i) })
      }
      const same = yield* raw({ method: "GET", path: listPath({ sortBy: "name", cursor }), token: alice.token })
      expect(same.status).toBe(200)

      const twice = yield* raw({ method: "GET", path: `/v1/organizations?cursor=${cursor}&cursor=${cursor}`, token: alice.token })
      expect(twice.status).toBe(400)
      expect(twice.body.issues).toEqual([{ path: ["cursor"], message: "must be a single cursor string" }])
    }))

  it.effect("binds a cursor to its list and caller: elsewhere it gives 400 BadRequest", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      const bob = yield* signUp()
      yield* seedOrganizations(alice.user.id, 5)
      yield* seedOrganizations(bob.user.id, 5)
      const organization = yield* alice.client.organizations.createOrganization({ payload: { name: "With teams" } })
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO teams (organization_id, name) SELECT ${organization.id}, 'team' || n FROM generate_series(1, 5) n`
      const organizations = yield* alice.client.organizations.listOrganizations({ urlParams: { limit: 2 } })
      const teams = yield* alice.client.teams.listTeams({ urlParams: { limit: 2 } })
      const teamsOfOne = yield* alice.client.teams.listTeams({ urlParams: { limit: 2, organizationId: organization.id } })
      for (
        const [label, token, path] of [
          ["another caller", bob.token, listPath({ limit: "2", cursor: organizations.nextCursor! })],
          ["a teams cursor on organizations", alice.token, listPath({ limit: "2", cursor: teams.nextCursor! })],
          ["an organizations cursor on teams", alice.token, `/v1/teams?cursor=${organizations.nextCursor}`],
          ["one organization's teams cursor on all teams", alice.token, `/v1/teams?cursor=${teamsOfOne.nextCursor}`],
          [
            "all teams' cursor on one organization's teams",
            alice.token,
            `/v1/teams?organizationId=${organization.id}&cursor=${teams.nextCursor}`
          ]
        ] as const
      ) {
        const response = yield* raw({ method: "GET", path, token })
        expect(response.status, label).toBe(400)
        expect(response.body._tag, label).toBe("BadRequest")
      }
      const own = yield* raw({ method: "GET", path: `/v1/teams?organizationId=${organization.id.toUpperCase()}&cursor=${teamsOfOne.nextCursor}`, token: alice.token })
      expect(own.status).toBe(200)
    }))

  it.effect("from an empty page, prevCursor leads back to the items before it", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      const orgs = yield* Effect.forEach(["one", "two", "three"], (name) =>
        alice.client.organizations.createOrganization({ payload: { name } }))
      const first = yield* alice.client.organizations.listOrganizations({ urlParams: { sortBy: "updatedAt", limit: 2 } })
      expect(first.data.map((org) => org.name)).toEqual(["three", "two"])
      // "one" moves to the front, so the page after "two" is now empty.
      yield* alice.client.organizations.updateOrganization({ path: { organizationId: orgs[0].id }, payload: { name: "uno" } })
      const empty = yield* alice.client.organizations.listOrganizations({
        urlParams: { sortBy: "updatedAt", limit: 2, cursor: first.nextCursor! }
      })
      expect(empty.data).toEqual([])
      expect(empty.nextCursor).toBeNull()
      expect(empty.prevCursor).not.toBeNull()
      const back = yield* alice.client.organizations.listOrganizations({
        urlParams: { sortBy: "updatedAt", limit: 2, cursor: empty.prevCursor! }
      })
      expect(back.data.map((org) => org.name)).toEqual(["uno", "three"])
      expect(back.prevCursor).toBeNull()
    }))

  it.effect("sorts names by code point, the same on every database", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      const names = ["beta", "Alpha", "Ärger", "alpha", "_under", "Zulu", "zebra", "Émile", "10 things", "9 lives"]
      yield* Effect.forEach(names, (name) => alice.client.organizations.createOrganization({ payload: { name } }))
      const list = yield* alice.client.organizations.listOrganizations({ urlParams: { sortBy: "name", sortOrder: "asc" } })
      expect(list.data.map((org) => org.name)).toEqual([...names].sort())
    }))

  it.effect("pages through teams of several organizations both ways, and of one organization", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      const first = yield* alice.client.organizations.createOrganization({ payload: { name: "First" } })
      const second = yield* alice.client.organizations.createOrganization({ payload: { name: "Second" } })
      const stranger = yield* signUp()
      const foreign = yield* stranger.client.organizations.createOrganization({ payload: { name: "Foreign" } })
      const sql = yield* SqlClient.SqlClient
      for (const [organizationId, count] of [[first.id, 70], [second.id, 50], [foreign.id, 40]] as const) {
        yield* sql`INSERT INTO teams (organization_id, name, created_at)
          SELECT ${organizationId}, 'team' || lpad(((n * 7) % 30)::text, 2, '0'),
                 timestamptz '2026-02-01T00:00:00Z' + ((n * 11) % 25) * interval '1 hour'
          FROM generate_series(1, ${count}) AS n`
      }
      for (const [organizationId, total] of [[undefined, 120], [first.id, 70], [second.id, 50]] as const) {
        for (const sortBy of sortFields) {
          const list = (cursor?: string) =>
            alice.client.teams.listTeams({
              urlParams: {
                sortBy,
                sortOrder: "asc",
                limit: 30,
                ...(organizationId ? { organizationId } : {}),
                ...(cursor ? { cursor } : {})
              }
            })
          const forward = [yield* list()]
          while (forward[forward.length - 1].nextCursor) forward.push(yield* list(forward[forward.length - 1].nextCursor!))
          const seen = forward.flatMap((page) => page.data)
          expect(seen.length).toBe(total)
          expect(forward[0].total).toBe(total)
          expect(seen.map((team) => team.id)).toEqual(expectedOrder(seen, sortBy, "asc"))
          if (organizationId) expect(seen.every((team) => team.organizationId === organizationId)).toBe(true)
          else expect(seen.some((team) => team.organizationId === foreign.id)).toBe(false)
          let page = forward[forward.length - 1]
          for (let index = forward.length - 2; index >= 0; index--) {
            page = yield* list(page.prevCursor!)
            expect(page.data).toEqual(forward[index].data)
          }
          expect(page.prevCursor).toBeNull()
        }
      }
    }))

  it.effect("keeps the order in step with renames, updates and new members", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      const bob = yield* signUp()
      const names = ["delta", "alpha", "charlie", "bravo"]
      const orgs = yield* Effect.forEach(names, (name) => alice.client.organizations.createOrganization({ payload: { name } }))
      const teams = yield* Effect.forEach(
        names,
        (name) => alice.client.teams.createTeam({ payload: { organizationId: orgs[0].id, name } })
      )
      yield* alice.client.organizations.updateOrganization({ path: { organizationId: orgs[0].id }, payload: { name: "zulu" } })
      yield* alice.client.teams.updateTeam({ path: { teamId: teams[1].id }, payload: { name: "yankee" } })
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${bob.user.id}, ${orgs[0].id}, 'member')`

      const byName = yield* alice.client.organizations.listOrganizations({ urlParams: { sortBy: "name", sortOrder: "asc" } })
      expect(byName.data.map((org) => org.name)).toEqual(["alpha", "bravo", "charlie", "zulu"])
      const byUpdate = yield* alice.client.organizations.listOrganizations({ urlParams: { sortBy: "updatedAt" } })
      expect(byUpdate.data[0].name).toBe("zulu")
      const teamsByName = yield* alice.client.teams.listTeams({ urlParams: { sortBy: "name", sortOrder: "asc" } })
      expect(teamsByName.data.map((team) => team.name)).toEqual(["bravo", "charlie", "delta", "yankee"])
      const teamsByUpdate = yield* alice.client.teams.listTeams({ urlParams: { sortBy: "updatedAt" } })
      expect(teamsByUpdate.data[0].name).toBe("yankee")

      const bobsOrganizations = yield* bob.client.organizations.listOrganizations({ urlParams: { sortBy: "name" } })
      expect(bobsOrganizations.data.map((org) => org.name)).toEqual(["zulu"])
      const bobsTeams = yield* bob.client.teams.listTeams({ urlParams: { sortBy: "name", sortOrder: "asc" } })
      expect(bobsTeams).toMatchObject({ total: 4 })
      expect(bobsTeams.data.map((team) => team.name)).toEqual(["bravo", "charlie", "delta", "yankee"])
    }))

  it.effect("gives an empty page with null cursors to a caller with no organizations", () =>
    Effect.gen(function*() {
      const loner = yield* signUp()
      const organizations = yield* loner.client.organizations.listOrganizations({ urlParams: {} })
      expect(organizations).toEqual({ data: [], total: 0, nextCursor: null, prevCursor: null })
      const teams = yield* loner.client.teams.listTeams({ urlParams: {} })
      expect(teams).toEqual({ data: [], total: 0, nextCursor: null, prevCursor: null })
    }))
})

describe("expectedOrder", () => {
  it("breaks ties by id", () => {
    const items = [
      { id: "b", createdAt: "1", updatedAt: "1", name: "x" },
      { id: "a", createdAt: "1", updatedAt: "1", name: "x" }
    ]
    expect(expectedOrder(items, "name", "asc")).toEqual(["a", "b"])
    expect(expectedOrder(items, "name", "desc")).toEqual(["b", "a"])
  })
})
