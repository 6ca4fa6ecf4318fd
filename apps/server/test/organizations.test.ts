import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Organization, type OrganizationId } from "@postline/domain"
import { Effect } from "effect"
import { organizationKeys } from "./support/ResponseFields.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

const isoUtc = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

const validOnboarding = {
  version: 1,
  status: "in_progress",
  currentStep: "goals",
  completedSteps: ["organization_profile", "job_role", "workspace_setup"],
  organizationProfile: { displayName: "Acme", jobRole: "founder_or_owner" },
  workspaceProfile: { teamName: "Marketing", website: null },
  goals: { primaryGoal: "vibe_marketing", teamSize: "6-20" },
  completedAt: null
}

layer(TestServer, { excludeTestServices: true })("organizations", (it) => {
  describe("create", () => {
    it.effect("returns 201 with exactly the contract's fields and the defaults of a new organization", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const response = yield* raw({ method: "POST", path: "/v1/organizations", token: alice.token, json: { name: "Acme" } })
        expect(response.status).toBe(201)
        expect(response.contentType).toMatch(/^application\/json/)
        const org = response.body
        expect(Object.keys(org).sort()).toEqual(organizationKeys)
        // In the contract's order (its section 2, as the schema lists them), got and listed too: rows are sent as
        // they come, so the statement's column order is the answer's.
        const contractOrder = Object.keys(Organization.fields)
        expect(Object.keys(org)).toEqual(contractOrder)
        const got = yield* raw({ method: "GET", path: `/v1/organizations/${org.id}`, token: alice.token })
        expect(Object.keys(got.body)).toEqual(contractOrder)
        const listed = yield* raw({ method: "GET", path: "/v1/organizations", token: alice.token })
        expect(Object.keys(listed.body.data[0])).toEqual(contractOrder)
        expect(org).toMatchObject({
          name: "Acme",
          billingEmail: null,
          onboardingData: null,
          paymentCustomerId: null,
          paymentSubscriptionId: null,
          paymentPaymentMethodId: null,
          paymentMeteredSubscriptionItemId: null,
          creditsBalance: 0,
          reservedCredits: 0,
          autoRechargeEnabled: false,
          autoRechargeThreshold: null,
          autoRechargeAmount: null,
          isSubscribed: false,
          subscriptionStatus: "inactive",
          subscriptionPlan: null,
          subscriptionStartedAt: null,
          subscriptionEndsAt: null,
          subscriptionCurrentPeriodEnd: null
        })
        expect(org.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
        expect(org.createdAt).toMatch(isoUtc)
        expect(org.updatedAt).toMatch(isoUtc)
      }))

    it.effect("makes the creator an admin: they can update it", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const org = yield* alice.client.organizations.createOrganization({ payload: { name: "Acme" } })
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql`SELECT role FROM memberships WHERE organization_id = ${org.id} AND user_id = ${alice.user.id}`
        expect(rows).toEqual([{ role: "admin" }])
        const updated = yield* alice.client.organizations.updateOrganization({
          path: { organizationId: org.id },
          payload: { name: "Acme Two" }
        })
        expect(updated.name).toBe("Acme Two")
      }))

    it.effect.each([
      ["2 characters", "ab"],
      ["64 characters", "a".repeat(64)],
      ["64 code points of astral characters", "😀".repeat(64)],
      ["inner spaces", "A b"]
    ])("accepts a name of %s", ([, name]) =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const response = yield* raw({ method: "POST", path: "/v1/organizations", token: alice.token, json: { name } })
        expect(response.status).toBe(201)
        expect(response.body.name).toBe(name)
      }))

    it.effect.each([
      ["1 character", "a"],
      ["65 characters", "a".repeat(65)],
      ["65 code points", "😀".repeat(65)],
      ["blank", "   "],
      ["zero-width spaces", "\u200b\u200b\u200b"],
      ["empty", ""],
      ["a NUL character", "ab\u0000cd"]
    ])("rejects a name of %s with 400 HttpApiDecodeError and writes nothing", ([, name]) =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const response = yield* raw({ method: "POST", path: "/v1/organizations", token: alice.token, json: { name } })
        expect(response.status).toBe(400)
        expect(response.body._tag).toBe("HttpApiDecodeError")
        expect(response.body.issues).toEqual([{ path: ["name"], message: "must be a string of 2 to 64 characters, not blank" }])
        const list = yield* alice.client.organizations.listOrganizations({ urlParams: {} })
        expect(list.total).toBe(0)
      }))

    it.effect("rejects a missing name, a non-string name and extra properties", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const post = (json: unknown) => raw({ method: "POST", path: "/v1/organizations", token: alice.token, json })
        const missing = yield* post({})
        expect(missing.status).toBe(400)
        expect(missing.body.issues).toEqual([{ path: ["name"], message: "is missing" }])
        const number = yield* post({ name: 42 })
        expect(number.status).toBe(400)
        expect(number.body.issues.map((issue: any) => issue.path)).toEqual([["name"]])
        const extra = yield* post({ name: "Acme", creditsBalance: 1000 })
        expect(extra.status).toBe(400)
        expect(extra.body._tag).toBe("HttpApiDecodeError")
        expect(extra.body.issues).toEqual([{ path: ["creditsBalance"], message: expect.stringContaining("unexpected") }])
        const list = yield* alice.client.organizations.listOrganizations({ urlParams: {} })
        expect(list.total).toBe(0)
      }))
  })

  describe("get and list", () => {
    it.effect("lists only the caller's organizations and hides others' as 404", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const bob = yield* signUp()
        const mine = yield* alice.client.organizations.createOrganization({ payload: { name: "Alice Co" } })
        const theirs = yield* bob.client.organizations.createOrganization({ payload: { name: "Bob Co" } })

        const list = yield* alice.client.organizations.listOrganizations({ urlParams: {} })
        expect(list.data.map((org) => org.id)).toEqual([mine.id])
        expect(list).toMatchObject({ total: 1, nextCursor: null, prevCursor: null })

        const got = yield* alice.client.organizations.getOrganization({ path: { organizationId: mine.id } })
        expect(got).toEqual(mine)

        for (const attempt of [
          raw({ method: "GET", path: `/v1/organizations/${theirs.id}`, token: alice.token }),
          raw({ method: "PATCH", path: `/v1/organizations/${theirs.id}`, token: alice.token, json: { name: "Mine now" } }),
          raw({ method: "GET", path: `/v1/organizations/${crypto.randomUUID()}`, token: alice.token })
        ]) {
          const response = yield* attempt
          expect(response.status).toBe(404)
          expect(response.body).toEqual({ _tag: "NotFound", message: expect.any(String) })
        }
        const unchanged = yield* bob.client.organizations.getOrganization({ path: { organizationId: theirs.id } })
        expect(unchanged).toEqual(theirs)
      }))

    it.effect("accepts an upper-case UUID in the path and rejects a malformed one with 400", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const org = yield* alice.client.organizations.createOrganization({ payload: { name: "Acme" } })
        const upper = yield* raw({ method: "GET", path: `/v1/organizations/${org.id.toUpperCase()}`, token: alice.token })
        expect(upper.status).toBe(200)
        expect(upper.body.id).toBe(org.id)
        const malformed = yield* raw({ method: "GET", path: "/v1/organizations/not-a-uuid", token: alice.token })
        expect(malformed.status).toBe(400)
        expect(malformed.body._tag).toBe("HttpApiDecodeError")
        expect(malformed.body.issues[0].path).toEqual(["organizationId"])
      }))
  })

  describe("update", () => {
    it.effect("changes the name and onboardingData, bumps updatedAt, and keeps other fields", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const org = yield* alice.client.organizations.createOrganization({ payload: { name: "Acme" } })
        yield* Effect.sleep("5 millis")
        const response = yield* raw({
          method: "PATCH",
          path: `/v1/organizations/${org.id}`,
          token: alice.token,
          json: { name: "Acme Inc", onboardingData: validOnboarding }
        })
        expect(response.status).toBe(200)
        expect(Object.keys(response.body).sort()).toEqual(organizationKeys)
        expect(response.body).toEqual({
          ...org,
          name: "Acme Inc",
          onboardingData: validOnboarding,
          updatedAt: expect.stringMatching(isoUtc)
        })
        expect(response.body.updatedAt > org.updatedAt).toBe(true)
        // Sent back byte for byte, in the order it was written.
        expect(JSON.stringify(response.body.onboardingData)).toBe(JSON.stringify(validOnboarding))

        const cleared = yield* alice.client.organizations.updateOrganization({
          path: { organizationId: org.id },
          payload: { onboardingData: null }
        })
        expect(cleared.onboardingData).toBeNull()
        expect(cleared.name).toBe("Acme Inc")
      }))

    it.effect("accepts the minimal onboardingData and an empty body", () =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const org = yield* alice.client.organizations.createOrganization({ payload: { name: "Acme" } })
        const minimal = { version: 1, status: "completed", currentStep: "completed", completedSteps: [] }
        const response = yield* raw({
          method: "PATCH",
          path: `/v1/organizations/${org.id}`,
          token: alice.token,
          json: { onboardingData: minimal }
        })
        expect(response.status).toBe(200)
        expect(response.body.onboardingData).toEqual(minimal)
        const empty = yield* raw({ method: "PATCH", path: `/v1/organizations/${org.id}`, token: alice.token, json: {} })
        expect(empty.status).toBe(200)
        expect(empty.body.onboardingData).toEqual(minimal)
      }))

    it.effect.each([
      ["a server-owned field", { creditsBalance: 1_000_000 }, ["creditsBalance"]],
      ["an unknown top-level field", { plan: "pro" }, ["plan"]],
      ["version 2", { onboardingData: { ...validOnboarding, version: 2 } }, ["onboardingData", "version"]],
      ["an unknown status", { onboardingData: { ...validOnboarding, status: "done" } }, ["onboardingData", "status"]],
      ["an unknown step", { onboardingData: { ...validOnboarding, currentStep: "billing" } }, ["onboardingData", "currentStep"]],
      [
        "an unknown completed step",
        { onboardingData: { ...validOnboarding, completedSteps: ["goals", "nope"] } },
        ["onboardingData", "completedSteps", "1"]
      ],
      ["an extra property in onboardingData", { onboardingData: { ...validOnboarding, extra: 1 } }, ["onboardingData", "extra"]],
      [
        "an extra property in organizationProfile",
        { onboardingData: { ...validOnboarding, organizationProfile: { displayName: "Acme", x: 1 } } },
        ["onboardingData", "organizationProfile", "x"]
      ],
      [
        "a short displayName",
        { onboardingData: { ...validOnboarding, organizationProfile: { displayName: "A" } } },
        ["onboardingData", "organizationProfile", "displayName"]
      ],
      [
        "a long teamName",
        { onboardingData: { ...validOnboarding, workspaceProfile: { teamName: "t".repeat(65), website: null } } },
        ["onboardingData", "workspaceProfile", "teamName"]
      ],
      [
        "a workspaceProfile without website",
        { onboardingData: { ...validOnboarding, workspaceProfile: { teamName: "Team" } } },
        ["onboardingData", "workspaceProfile", "website"]
      ],
      [
        "an unknown team size",
        { onboardingData: { ...validOnboarding, goals: { primaryGoal: "vibe_marketing", teamSize: "100+" } } },
        ["onboardingData", "goals", "teamSize"]
      ],
      [
        "an extra property in goals",
        { onboardingData: { ...validOnboarding, goals: { primaryGoal: "vibe_marketing", teamSize: "1-5", x: 1 } } },
        ["onboardingData", "goals", "x"]
      ],
      ["a name too short", { name: "x" }, ["name"]],
      [
        "an extra property in workspaceProfile",
        { onboardingData: { ...validOnboarding, workspaceProfile: { teamName: "Team", website: null, x: 1 } } },
        ["onboardingData", "workspaceProfile", "x"]
      ],
      [
        "an unknown jobRole",
        { onboardingData: { ...validOnboarding, organizationProfile: { displayName: "Acme", jobRole: "ceo" } } },
        ["onboardingData", "organizationProfile", "jobRole"]
      ],
      [
        "an unknown primaryGoal",
        { onboardingData: { ...validOnboarding, goals: { primaryGoal: "fame", teamSize: "1-5" } } },
        ["onboardingData", "goals", "primaryGoal"]
      ],
      ["completedSteps that is not an array", { onboardingData: { ...validOnboarding, completedSteps: "goals" } }, [
        "onboardingData",
        "completedSteps"
      ]],
      ["a completedAt that is not a string", { onboardingData: { ...validOnboarding, completedAt: 5 } }, [
        "onboardingData",
        "completedAt"
      ]],
      ["a completedAt with a NUL character", { onboardingData: { ...validOnboarding, completedAt: "2026\u0000" } }, [
        "onboardingData",
        "completedAt"
      ]],
      ["onboardingData that is a string", { onboardingData: "done" }, ["onboardingData"]]
    ])("rejects %s with 400 at the offending path and changes nothing", ([, json, path]) =>
      Effect.gen(function*() {
        const alice = yield* signUp()
        const org = yield* alice.client.organizations.createOrganization({ payload: { name: "Acme" } })
        const response = yield* raw({ method: "PATCH", path: `/v1/organizations/${org.id}`, token: alice.token, json })
        expect(response.status).toBe(400)
        expect(response.body._tag).toBe("HttpApiDecodeError")
        expect(response.body.issues.map((issue: any) => issue.path)).toContainEqual(path)
        const after = yield* alice.client.organizations.getOrganization({ path: { organizationId: org.id } })
        expect(after).toEqual(org)
      }))

    it.effect("forbids a plain member (403) and allows an owner", () =>
      Effect.gen(function*() {
        const admin = yield* signUp()
        const member = yield* signUp()
        const owner = yield* signUp()
        const org = yield* admin.client.organizations.createOrganization({ payload: { name: "Acme" } })
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES
          (${member.user.id}, ${org.id}, 'member'), (${owner.user.id}, ${org.id}, 'owner')`

        const asMember = yield* raw({
          method: "PATCH",
          path: `/v1/organizations/${org.id}`,
          token: member.token,
          json: { name: "Hijacked" }
        })
        expect(asMember.status).toBe(403)
        expect(asMember.body).toEqual({ _tag: "Forbidden", message: expect.any(String) })
        const seen = yield* member.client.organizations.getOrganization({ path: { organizationId: org.id as OrganizationId } })
        expect(seen.name).toBe("Acme")

        const byOwner = yield* owner.client.organizations.updateOrganization({
          path: { organizationId: org.id },
          payload: { name: "Owned" }
        })
        expect(byOwner.name).toBe("Owned")
      }))
  })
})
