import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { createUserWithToken, type ServerProcess, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, testDatabaseKind } from "./support/TestDatabase.js"

/**
 * One Idempotency-Key, a hundred requests at once: the publish happens once
 * at the provider, and every answer is the stored one or a 409 while it runs.
 * On PostgreSQL the requests are spread over two server processes.
 */
describe("a hundred requests with one Idempotency-Key", () => {
  it.scopedLive("publish exactly once, whichever process they reach", () =>
    Effect.gen(function*() {
      const mastodon = yield* makeMastodonFake()
      // Publishing costs nothing here: the credits are another test's.
      const env = { ...(yield* freshDatabaseEnv), OUTBOUND_ALLOW_PRIVATE: "true", CREDIT_COSTS: `{"mastodon":0}` }
      const owner = yield* createUserWithToken(env)
      const servers: Array<ServerProcess> = testDatabaseKind === "postgres"
        ? yield* Effect.all([startServer(env), startServer(env)], { concurrency: 2 })
        : [yield* startServer(env)]
      const send = (server: ServerProcess, method: string, path: string, json: unknown, headers: Record<string, string> = {}) =>
        Effect.promise(async () => {
          const response = await fetch(`${server.base}${path}`, {
            method,
            headers: { authorization: `Bearer ${owner.token}`, "content-type": "application/json", ...headers },
            body: JSON.stringify(json)
          })
          return { status: response.status, text: await response.text(), replayed: response.headers.get("idempotent-replayed") }
        })
      const [first] = servers
      const organization = JSON.parse((yield* send(first, "POST", "/v1/organizations", { name: "Race" })).text)
      const team = JSON.parse((yield* send(first, "POST", "/v1/teams", { organizationId: organization.id, name: "Team" })).text)
      const account = JSON.parse((yield* send(first, "POST", `/v1/teams/${team.id}/social-accounts`, {
        provider: "mastodon",
        instanceUrl: mastodon.url,
        accessToken: mastodon.token
      })).text)
      const post = JSON.parse((yield* send(first, "POST", `/v1/teams/${team.id}/posts`, { content: "Once only" })).text)

      const key = randomUUID()
      const answers = yield* Effect.all(
        Array.from({ length: 100 }, (_, i) =>
          send(servers[i % servers.length], "POST", `/v1/teams/${team.id}/posts/${post.id}/post-now`, {
            socialAccountIds: [account.id]
          }, { "idempotency-key": key })),
        { concurrency: "unbounded" }
      )
      const stored = answers.filter((answer) => answer.status !== 409)
      expect(new Set(stored.map((answer) => answer.text)).size).toBe(1)
      expect(stored.filter((answer) => answer.replayed === null)).toHaveLength(1)
      for (const answer of answers.filter((answer) => answer.status === 409)) {
        expect(JSON.parse(answer.text)).toMatchObject({ _tag: "Conflict", message: expect.stringMatching(/still being processed/) })
      }
      expect(mastodon.statuses).toHaveLength(1)
    }))
})
