import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { raw, signUp, TestServer } from "./support/TestServer.js"

const memberKeys = ["createdAt", "email", "name", "organizationId", "role", "updatedAt", "userId"]

/** An organization whose creator (its admin) is the caller, plus helpers to enlist others. */
const organizationOfAdmin = Effect.gen(function*() {
  const admin = yield* signUp("Ada Admin")
  const organization = yield* admin.client.organizations.createOrganization({ payload: { name: "Acme" } })
  const enlist = (role: "owner" | "admin" | "member", name = `A ${role}`) =>
    Effect.gen(function*() {
      const user = yield* signUp(name)
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${user.user.id}, ${organization.id}, ${role})`
      return user
    })
  return { admin, organization, enlist }
})

const membersPath = (organizationId: string, userId?: string) =>
  `/v1/organizations/${organizationId}/members${userId ? `/${userId}` : ""}`

layer(TestServer, { excludeTestServices: true })("members", (it) => {
  describe("list", () => {
    it.effect("any member lists the members with exactly the Member fields; a stranger gets 404", () =>
      Effect.gen(function*() {
        const { admin, enlist, organization } = yield* organizationOfAdmin
        const member = yield* enlist("member", "Mia Member")
        const stranger = yield* signUp()
        const response = yield* raw({ method: "GET", path: `${membersPath(organization.id)}?sortBy=name&sortOrder=asc`, token: member.token })
        expect(response.status).toBe(200)
        expect(response.body.total).toBe(2)
        for (const item of response.body.data) expect(Object.keys(item).sort()).toEqual(memberKeys)
        expect(response.body.data.map((m: any) => [m.name, m.role, m.email])).toEqual([
          ["Ada Admin", "admin", admin.user.email],
          ["Mia Member", "member", member.user.email]
        ])
        const refused = yield* raw({ method: "GET", path: membersPath(organization.id), token: stranger.token })
        expect(refused.status).toBe(404)
        expect(refused.body._tag).toBe("NotFound")
      }))

    it.effect("pages through members both ways", () =>
      Effect.gen(function*() {
        const { admin, enlist, organization } = yield* organizationOfAdmin
        yield* Effect.forEach(["e", "c", "a", "d", "b"], (name) => enlist("member", `member ${name}`))
        const list = (cursor?: string) =>
          admin.client.members.listMembers({
            path: { organizationId: organization.id },
            urlParams: { sortBy: "name", sortOrder: "asc", limit: 2, ...(cursor ? { cursor } : {}) }
          })
        const pages = [yield* list()]
        while (pages[pages.length - 1].nextCursor) pages.push(yield* list(pages[pages.length - 1].nextCursor!))
        expect(pages.flatMap((page) => page.data.map((m) => m.name))).toEqual([
          "Ada Admin",
          "member a",
          "member b",
          "member c",
          "member d",
          "member e"
        ])
        const back = yield* list(pages[2].prevCursor!)
        expect(back.data).toEqual(pages[1].data)
      }))
  })

  describe("add", () => {
    it.effect("an admin adds an existing user, who sees the organization and its teams at once", () =>
      Effect.gen(function*() {
        const { admin, organization } = yield* organizationOfAdmin
        const team = yield* admin.client.teams.createTeam({ payload: { organizationId: organization.id, name: "Team" } })
        const newcomer = yield* signUp("New Comer")
        const response = yield* raw({
          method: "POST",
          path: membersPath(organization.id),
          token: admin.token,
          json: { email: newcomer.user.email.toUpperCase(), role: "member" }
        })
        expect(response.status).toBe(201)
        expect(Object.keys(response.body).sort()).toEqual(memberKeys)
        expect(response.body).toMatchObject({
          organizationId: organization.id,
          userId: newcomer.user.id,
          email: newcomer.user.email,
          name: "New Comer",
          role: "member"
        })
        const seen = yield* newcomer.client.teams.listTeams({ urlParams: {} })
        expect(seen.data).toEqual([team])
        const organizations = yield* newcomer.client.organizations.listOrganizations({ urlParams: {} })
        expect(organizations.data.map((o) => o.id)).toEqual([organization.id])
      }))

    it.effect("gives 404 for an unknown email, 409 for a member already, and 400 for bad bodies", () =>
      Effect.gen(function*() {
        const { admin, enlist, organization } = yield* organizationOfAdmin
        const member = yield* enlist("member")
        const post = (json: unknown) => raw({ method: "POST", path: membersPath(organization.id), token: admin.token, json })
        const unknown = yield* post({ email: "nobody@example.com", role: "member" })
        expect(unknown.status).toBe(404)
        expect(unknown.body).toEqual({ _tag: "NotFound", message: "No user with email nobody@example.com" })
        const again = yield* post({ email: member.user.email, role: "admin" })
        expect(again.status).toBe(409)
        expect(again.body._tag).toBe("Conflict")
        for (
          const json of [
            { email: member.user.email },
            { email: "not-an-email", role: "member" },
            { email: member.user.email, role: "superuser" },
            { email: member.user.email, role: "member", extra: 1 }
          ]
        ) {
          const response = yield* post(json)
          expect(response.status, JSON.stringify(json)).toBe(400)
          expect(response.body._tag).toBe("HttpApiDecodeError")
        }
        const roles = yield* admin.client.members.listMembers({ path: { organizationId: organization.id }, urlParams: {} })
        expect(roles.data.find((m) => m.userId === member.user.id)?.role).toBe("member")
      }))

    it.effect("forbids a plain member (403), and lets only an owner add an owner", () =>
      Effect.gen(function*() {
        const { admin, enlist, organization } = yield* organizationOfAdmin
        const member = yield* enlist("member")
        const owner = yield* enlist("owner")
        const candidate = yield* signUp()
        const post = (token: string, role: string) =>
          raw({ method: "POST", path: membersPath(organization.id), token, json: { email: candidate.user.email, role } })
        expect((yield* post(member.token, "member")).status).toBe(403)
        const adminAddsOwner = yield* post(admin.token, "owner")
        expect(adminAddsOwner.status).toBe(403)
        expect(adminAddsOwner.body._tag).toBe("Forbidden")
        expect((yield* post(owner.token, "owner")).status).toBe(201)
      }))
  })

  describe("change role", () => {
    it.effect("an admin promotes and demotes, but only an owner touches the owner role", () =>
      Effect.gen(function*() {
        const { admin, enlist, organization } = yield* organizationOfAdmin
        const member = yield* enlist("member")
        const owner = yield* enlist("owner")
        const patch = (token: string, userId: string, role: string) =>
          raw({ method: "PATCH", path: membersPath(organization.id, userId), token, json: { role } })

        const promoted = yield* patch(admin.token, member.user.id, "admin")
        expect(promoted.status).toBe(200)
        expect(promoted.body).toMatchObject({ userId: member.user.id, role: "admin" })
        expect(promoted.body.updatedAt >= promoted.body.createdAt).toBe(true)

        expect((yield* patch(admin.token, member.user.id, "owner")).status).toBe(403)
        expect((yield* patch(admin.token, owner.user.id, "member")).status).toBe(403)
        expect((yield* patch(owner.token, member.user.id, "owner")).body.role).toBe("owner")
        expect((yield* patch(member.token, admin.user.id, "member")).body.role).toBe("member")

        const plain = yield* patch(admin.token, owner.user.id, "admin")
        expect(plain.status).toBe(403)
        const missing = yield* patch(owner.token, crypto.randomUUID(), "admin")
        expect(missing.status).toBe(404)
      }))

    it.effect("refuses to demote the last admin or owner with 409", () =>
      Effect.gen(function*() {
        const { admin, enlist, organization } = yield* organizationOfAdmin
        yield* enlist("member")
        const response = yield* raw({
          method: "PATCH",
          path: membersPath(organization.id, admin.user.id),
          token: admin.token,
          json: { role: "member" }
        })
        expect(response.status).toBe(409)
        expect(response.body).toEqual({
          _tag: "Conflict",
          reason: "last_admin_or_owner",
          message: "An organization keeps at least one admin or owner"
        })
        const still = yield* admin.client.members.listMembers({ path: { organizationId: organization.id }, urlParams: {} })
        expect(still.data.find((m) => m.userId === admin.user.id)?.role).toBe("admin")
      }))

    it.effect("lets only one of two admins demoting themselves at once succeed", () =>
      Effect.gen(function*() {
        const { admin, enlist, organization } = yield* organizationOfAdmin
        const second = yield* enlist("admin")
        const demote = (user: typeof admin) =>
          raw({ method: "PATCH", path: membersPath(organization.id, user.user.id), token: user.token, json: { role: "member" } })
        const statuses = yield* Effect.all([demote(admin), demote(second)], { concurrency: 2 }).pipe(
          Effect.map((responses) => responses.map((response) => response.status).sort())
        )
        expect(statuses).toEqual([200, 409])
        const sql = yield* SqlClient.SqlClient
        const managers = yield* sql`SELECT user_id FROM memberships WHERE organization_id = ${organization.id} AND role <> 'member'`
        expect(managers).toHaveLength(1)
      }))
  })

  describe("remove", () => {
    it.effect("a member leaves and loses access at once; the answer is the removed member", () =>
      Effect.gen(function*() {
        const { admin, enlist, organization } = yield* organizationOfAdmin
        yield* admin.client.teams.createTeam({ payload: { organizationId: organization.id, name: "Team" } })
        const member = yield* enlist("member")
        const response = yield* raw({ method: "DELETE", path: membersPath(organization.id, member.user.id), token: member.token })
        expect(response.status).toBe(200)
        expect(response.body).toMatchObject({ userId: member.user.id, role: "member", organizationId: organization.id })
        const after = yield* raw({ method: "GET", path: `/v1/organizations/${organization.id}`, token: member.token })
        expect(after.status).toBe(404)
        expect((yield* member.client.teams.listTeams({ urlParams: {} })).total).toBe(0)
        expect((yield* member.client.organizations.listOrganizations({ urlParams: {} })).total).toBe(0)
      }))

    it.effect("admins remove others, only owners remove owners, members remove no one else", () =>
      Effect.gen(function*() {
        const { admin, enlist, organization } = yield* organizationOfAdmin
        const member = yield* enlist("member")
        const other = yield* enlist("member")
        const owner = yield* enlist("owner")
        const remove = (token: string, userId: string) =>
          raw({ method: "DELETE", path: membersPath(organization.id, userId), token })
        expect((yield* remove(member.token, other.user.id)).status).toBe(403)
        expect((yield* remove(admin.token, owner.user.id)).status).toBe(403)
        expect((yield* remove(admin.token, other.user.id)).status).toBe(200)
        expect((yield* remove(admin.token, other.user.id)).status).toBe(404)
        expect((yield* remove(owner.token, admin.user.id)).status).toBe(200)
        const left = yield* owner.client.members.listMembers({ path: { organizationId: organization.id }, urlParams: {} })
        expect(left.data.map((m) => m.userId).sort()).toEqual([member.user.id, owner.user.id].sort())
      }))

    it.effect("refuses to remove the last admin or owner with 409", () =>
      Effect.gen(function*() {
        const { admin, organization } = yield* organizationOfAdmin
        const response = yield* raw({ method: "DELETE", path: membersPath(organization.id, admin.user.id), token: admin.token })
        expect(response.status).toBe(409)
        expect(response.body._tag).toBe("Conflict")
        expect((yield* admin.client.organizations.listOrganizations({ urlParams: {} })).total).toBe(1)
      }))
  })
})
