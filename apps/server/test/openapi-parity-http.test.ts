import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { isDocumentedException } from "./support/DocumentExceptions.js"
import { edgeValue, isValid, type JsonSchema, operations, validValue } from "./support/OpenApiDocument.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

/** The same parity as openapi-parity.test.ts, through the real HTTP stack: the found disagreements, then a sample. */

const operation = (id: string) => {
  const found = operations.find((candidate) => candidate.id === id)
  if (found === undefined) throw new Error(`no operation ${id} in openapi.json`)
  return found
}

const bodyOf = (id: string): JsonSchema => operation(id).body!
const queryOf = (id: string): JsonSchema => operation(id).query!

const decodeErrorTags = ["HttpApiDecodeError", "OAuthError"]

const expectRefusal = (response: { status: number; body: any }, tag: string) => {
  expect(response.status).toBe(400)
  expect(response.body._tag).toBe(tag)
  expect(typeof response.body.message).toBe("string")
  expect(response.body.message.length).toBeGreaterThan(0)
}

const setUp = Effect.gen(function*() {
  const { client, token } = yield* signUp()
  const organization = yield* client.organizations.createOrganization({ payload: { name: "Acme" } })
  const team = yield* client.teams.createTeam({ payload: { organizationId: organization.id, name: "Marketing" } })
  return { token, organization, team }
})

layer(TestServer, { excludeTestServices: true })("openapi.json through the HTTP stack", (it) => {
  describe("the disagreements found, each now one rule", () => {
    it.effect("limit 0 and 00 are invalid per the document and refused; 007 is valid and accepted", () =>
      Effect.gen(function*() {
        const { token } = yield* setUp
        const query = queryOf("organizations.listOrganizations")
        for (const limit of ["0", "00"]) {
          expect(isValid(query, { limit })).toBe(false)
          expectRefusal(yield* raw({ method: "GET", path: `/v1/organizations?limit=${limit}`, token }), "HttpApiDecodeError")
        }
        expect(isValid(query, { limit: "007" })).toBe(true)
        expect((yield* raw({ method: "GET", path: "/v1/organizations?limit=007", token })).status).toBe(200)
      }))

    it.effect("empty member email, team timezone, past expiresAt and names with NUL are invalid and refused", () =>
      Effect.gen(function*() {
        const { organization, team, token } = yield* setUp
        const cases = [
          { id: "members.addMember", method: "POST", path: `/v1/organizations/${organization.id}/members`, json: { email: "", role: "member" } },
          { id: "teams.updateTeam", method: "PATCH", path: `/v1/teams/${team.id}`, json: { timezone: "" } },
          { id: "organizations.createOrganization", method: "POST", path: "/v1/organizations", json: { name: "Ac\u0000me" } },
          { id: "teams.createTeam", method: "POST", path: "/v1/teams", json: { organizationId: organization.id, name: "  " } }
        ] as const
        for (const { id, json, method, path } of cases) {
          expect(isValid(bodyOf(id), json), id).toBe(false)
          expectRefusal(yield* raw({ method, path, token, json }), "HttpApiDecodeError")
        }
        // A past instant has the documented shape: the description says it must be in the future.
        const past = { name: "CI", expiresAt: "2020-01-01T00:00:00Z" }
        expect(isValid(bodyOf("apiKeys.createApiKey"), past)).toBe(true)
        expect(isDocumentedException(past)).toBe(true)
        const path = `/v1/organizations/${organization.id}/api-keys`
        expectRefusal(yield* raw({ method: "POST", path, token, json: past }), "HttpApiDecodeError")
      }))

    it.effect("an expiresAt with an offset, or without seconds, is valid per the document and accepted", () =>
      Effect.gen(function*() {
        const { organization, token } = yield* setUp
        for (const expiresAt of ["2027-06-30T00:00:00+02:00", "2099-06-30T00:00Z", "2096-02-29t23:59:59.123456789-14:59"]) {
          const json = { name: "CI", expiresAt }
          expect(isValid(bodyOf("apiKeys.createApiKey"), json), expiresAt).toBe(true)
          const response = yield* raw({ method: "POST", path: `/v1/organizations/${organization.id}/api-keys`, token, json })
          expect(response.status, expiresAt).toBe(201)
        }
        for (const expiresAt of ["2027-02-29T00:00:00Z", "2027-06-30T24:00:00Z", "2027-06-30T00:00:00+15:00", "2027-06-30"]) {
          const json = { name: "CI", expiresAt }
          expect(isValid(bodyOf("apiKeys.createApiKey"), json), expiresAt).toBe(false)
          const response = yield* raw({ method: "POST", path: `/v1/organizations/${organization.id}/api-keys`, token, json })
          expectRefusal(response, "HttpApiDecodeError")
        }
      }))

    it.effect("empty OAuth secrets are invalid and refused; an empty scope is valid and counts as none", () =>
      Effect.gen(function*() {
        const empties = [
          { id: "auth.revoke", path: "/v1/auth/revoke", json: { token: "" } },
          { id: "auth.token", path: "/v1/auth/token", json: { grant_type: "refresh_token", refresh_token: "", client_id: "cli" } },
          {
            id: "auth.token",
            path: "/v1/auth/token",
            json: { grant_type: "urn:ietf:params:oauth:grant-type:device_code", device_code: "", client_id: "cli" }
          }
        ]
        for (const { id, json, path } of empties) {
          expect(isValid(bodyOf(id), json), path).toBe(false)
          const response = yield* raw({ method: "POST", path, json })
          expectRefusal(response, "OAuthError")
          expect(response.body.error).toBe("invalid_request")
        }
        const scopeless = { client_id: "postline-cli", scope: "" }
        expect(isValid(bodyOf("auth.requestDeviceCode"), scopeless)).toBe(true)
        expect((yield* raw({ method: "POST", path: "/v1/auth/device/code", json: scopeless })).status).toBe(200)
      }))
  })

  describe("a generated sample", () => {

    const sample = (schema: JsonSchema, extraProperties: boolean) =>
      fc.sample(fc.oneof(validValue(schema), edgeValue(schema, { extraProperties })), { numRuns: 25, seed: 20261123 })

    const check = (value: unknown, documented: boolean, response: { status: number; body: any }) => {
      const context = JSON.stringify({ value, status: response.status, body: response.body })
      if (documented && !isDocumentedException(value)) {
        // Whatever the state makes of it (403 for a role, 404 for an unknown user), not a refusal of its form.
        expect(response.status, context).not.toBe(400)
        expect(response.status, context).toBeLessThan(500)
      } else if (!documented) {
        expect(response.status, context).toBe(400)
        expect(decodeErrorTags, context).toContain(response.body._tag)
        expect(typeof response.body.message, context).toBe("string")
      }
    }

    it.effect("of bodies and queries is answered as the document says", () =>
      Effect.gen(function*() {
        const { organization, team, token } = yield* setUp
        const bodies = [
          { id: "organizations.createOrganization", method: "POST", path: "/v1/organizations" },
          { id: "teams.updateTeam", method: "PATCH", path: `/v1/teams/${team.id}` },
          { id: "members.addMember", method: "POST", path: `/v1/organizations/${organization.id}/members` },
          { id: "apiKeys.createApiKey", method: "POST", path: `/v1/organizations/${organization.id}/api-keys` },
          { id: "auth.revoke", method: "POST", path: "/v1/auth/revoke" }
        ] as const
        for (const { id, method, path } of bodies) {
          const schema = bodyOf(id)
          for (const json of sample(schema, true)) {
            check(json, isValid(schema, json), yield* raw({ method, path, token, json }))
          }
        }
        // Cursors are signed by the server: a made-up one is refused whatever its form, so none is sent.
        const query = queryOf("organizations.listOrganizations")
        for (const value of sample(query, false)) {
          if (value === null || typeof value !== "object") continue
          const { cursor: _cursor, ...params } = value as Record<string, unknown>
          if (!Object.values(params).every((v) => typeof v === "string")) continue
          const search = new URLSearchParams(params as Record<string, string>)
          check(params, isValid(query, params), yield* raw({ method: "GET", path: `/v1/organizations?${search}`, token }))
        }
      }))
  })
})
