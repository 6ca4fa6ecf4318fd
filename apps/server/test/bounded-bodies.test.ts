import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { jsonShapeLimits } from "../src/Http/JsonShape.js"
import { maxReportedIssues } from "../src/Http/ErrorBodies.js"
import { createUserWithToken, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

const keys = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 1]))

/** Bodies under the 1 MiB limit whose decoding, unbounded, listed an issue per item or key. */
const hostileBodies: Record<string, string> = {
  "200,000 completed steps": JSON.stringify({
    onboardingData: {
      version: 1,
      status: "in_progress",
      currentStep: "goals",
      completedSteps: Array.from({ length: 200_000 }, () => "x")
    }
  }),
  "80,000 unknown keys in onboardingData": JSON.stringify({ onboardingData: keys(80_000) }),
  "80,000 unknown keys at the top": JSON.stringify(keys(80_000)),
  "nesting 100,000 deep": "[".repeat(100_000) + "]".repeat(100_000)
}

const anError = (body: any) => {
  expect(Object.keys(body).sort()).toEqual(["_tag", "issues", "message"])
  expect(body._tag).toBe("HttpApiDecodeError")
  expect(body.issues.length).toBeLessThanOrEqual(maxReportedIssues)
}

layer(TestServer, { excludeTestServices: true })("bounded request bodies", (it) => {
  for (const [name, body] of Object.entries(hostileBodies)) {
    it.effect(`${name}: one small 400, before any access check`, () =>
      Effect.gen(function*() {
        const stranger = yield* signUp()
        for (const request of [
          { method: "PATCH", path: `/v1/organizations/${randomUUID()}` },
          { method: "POST", path: "/v1/organizations" }
        ] as const) {
          const response = yield* raw({
            ...request,
            token: stranger.token,
            body,
            headers: { "content-type": "application/json" }
          })
          expect(response.status, request.method).toBe(400)
          anError(response.body)
          expect(JSON.stringify(response.body).length).toBeLessThan(2_000)
        }
      }))
  }

  it.effect("names where the shape ran over", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      const org = yield* alice.client.organizations.createOrganization({ payload: { name: "Acme" } })
      const patch = (json: unknown) => raw({ method: "PATCH", path: `/v1/organizations/${org.id}`, token: alice.token, json })
      const steps = (length: number) => ({
        onboardingData: { version: 1, status: "in_progress", currentStep: "goals", completedSteps: Array(length).fill("goals") }
      })
      const tooMany = yield* patch(steps(jsonShapeLimits.itemsPerArray + 1))
      expect(tooMany.body.issues).toEqual([{
        path: ["onboardingData", "completedSteps"],
        message: `has ${jsonShapeLimits.itemsPerArray + 1} items; at most ${jsonShapeLimits.itemsPerArray} are allowed`
      }])
      const keys = yield* patch({ onboardingData: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i])) })
      expect(keys.body.issues).toEqual([{ path: ["onboardingData"], message: "has 65 properties; at most 64 are allowed" }])
      const deep = yield* patch({ name: [[[[[[[[1]]]]]]]] })
      expect(deep.body.issues[0].path).toEqual(["name", "0", "0", "0", "0", "0", "0", "0"])
      expect(deep.body.issues[0].message).toMatch(/nested too deeply/)
      // At the bounds the schema decides: seven steps is the most the contract's enum allows.
      expect((yield* patch(steps(7))).status).toBe(200)
      const eight = yield* patch(steps(8))
      expect(eight.body.issues).toEqual([{
        path: ["onboardingData", "completedSteps"],
        message: "must be an array of at most 7 steps"
      }])
    }))

  it.effect(`lists at most ${maxReportedIssues} issues and says how many more there were`, () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      const org = yield* alice.client.organizations.createOrganization({ payload: { name: "Acme" } })
      const response = yield* raw({
        method: "PATCH",
        path: `/v1/organizations/${org.id}`,
        token: alice.token,
        json: { name: "Acme", ...Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`unknown${i}`, i])) }
      })
      expect(response.status).toBe(400)
      expect(response.body.issues).toHaveLength(maxReportedIssues)
      expect(response.body.message).toMatch(/; 10 more issues not listed$/)
    }))
})

describe("the server process under hostile bodies", () => {
  it.scopedLive("stays up with its bounded heap, answering each one with a small 400, then everyone else", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabaseEnv
      const { token } = yield* createUserWithToken(database)
      const server = yield* startServer(database)
      const send = (method: string, path: string, body: string) =>
        fetch(`${server.base}${path}`, {
          method,
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body
        }).then(async (response) => ({ status: response.status, length: (await response.text()).length }))
      const answers = yield* Effect.promise(() =>
        Promise.all(
          Array.from({ length: 5 }, () => Object.values(hostileBodies)).flat().flatMap((body) => [
            send("PATCH", `/v1/organizations/${randomUUID()}`, body),
            send("POST", "/v1/organizations", body)
          ])
        )
      )
      for (const answer of answers) {
        expect(answer.status).toBe(400)
        expect(answer.length).toBeLessThan(2_000)
      }
      expect((yield* Effect.promise(() => send("POST", "/v1/organizations", `{"name":"Still here"}`))).status).toBe(201)
      expect(server.child.exitCode).toBeNull()
    }))
})
