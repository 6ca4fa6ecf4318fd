import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { creditsOf, grantCredits, publishEnv, readUntil } from "./support/ProcessPublishing.js"
import { callsAs, createUserWithToken, type ProcessResponse, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, testDatabaseKind } from "./support/TestDatabase.js"

const created = (answer: ProcessResponse) => {
  if (answer.status !== 201) throw new Error(`setup failed: ${answer.status} ${answer.text}`)
  return answer.body
}

describe("a thread whose process dies (SIGKILL) after part 2 of 3 went out", () => {
  it.scopedLive("is finished by the restarted server with part 3 alone: each part posted once, in one thread, paid once", () =>
    Effect.gen(function*() {
      const recoverySeconds = testDatabaseKind === "embedded" ? 600 : 10
      const mastodon = yield* makeMastodonFake()
      const env = publishEnv(yield* freshDatabaseEnv, { PUBLISH_TIMEOUT_SECONDS: "3", PUBLISH_RECOVERY_SECONDS: String(recoverySeconds) })
      const { token } = yield* createUserWithToken(env)
      const setup = yield* startServer(env)
      const setupCall = callsAs(setup, token)
      const organization = created(yield* setupCall("POST", "/v1/organizations", { name: "Threads" }))
      const team = created(yield* setupCall("POST", "/v1/teams", { organizationId: organization.id, name: "Social" }))
      const toot = created(yield* setupCall("POST", `/v1/teams/${team.id}/social-accounts`, {
        provider: "mastodon",
        instanceUrl: mastodon.url,
        accessToken: mastodon.token
      }))
      const post = created(yield* setupCall("POST", `/v1/teams/${team.id}/posts`, {
        content: "1/3 First",
        thread: [{ content: "2/3 Second" }, { content: "3/3 Third" }]
      }))
      setup.child.kill("SIGTERM")
      yield* Effect.promise(() => setup.exited)
      yield* grantCredits(env, organization.id, 10)

      // The instance takes parts 1 and 2, and hangs on part 3 until the process is killed.
      mastodon.neverAnswerStatusWithText("3/3 Third")
      const first = yield* startServer(env)
      const postPath = `/v1/teams/${team.id}/posts/${post.id}`
      void fetch(`${first.base}${postPath}/post-now`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ socialAccountIds: [toot.id] })
      }).catch(() => undefined)
      const statusRequests = () => mastodon.requests.filter((request) => request.method === "POST" && request.path === "/api/v1/statuses")
      const before = yield* readUntil(
        callsAs(first, token)("GET", postPath),
        (answer) => statusRequests().length === 3 && answer.body.targets[0]?.parts.length === 2
      )
      expect(before.body).toMatchObject({ status: "publishing", targets: [{ status: "pending", parts: [{ position: 1 }, { position: 2 }] }] })
      first.child.kill("SIGKILL")
      yield* Effect.promise(() => first.exited)

      const second = yield* startServer(env)
      const call = callsAs(second, token)
      const after = yield* readUntil(
        call("GET", postPath),
        (answer) => answer.body.status !== "publishing",
        testDatabaseKind === "embedded" ? recoverySeconds / 2 : recoverySeconds + 180
      )
      expect(after.body.status).toBe("published")
      // Parts 1 and 2 were not sent again: part 3 was, under its own key, as a reply to part 2.
      const key = `${post.id}:${toot.id}`
      expect(statusRequests().map((request) => request.headers["idempotency-key"])).toEqual([key, `${key}:2`, `${key}:3`, `${key}:3`])
      expect(mastodon.statuses.map(({ idempotencyKey, inReplyToId, text }) => ({ idempotencyKey, inReplyToId, text }))).toEqual([
        { idempotencyKey: key, inReplyToId: undefined, text: "1/3 First" },
        { idempotencyKey: `${key}:2`, inReplyToId: mastodon.statuses[0].id, text: "2/3 Second" },
        { idempotencyKey: `${key}:3`, inReplyToId: mastodon.statuses[1].id, text: "3/3 Third" }
      ])
      expect(after.body.targets[0]).toMatchObject({
        status: "published",
        creditsSpent: 3,
        parts: mastodon.statuses.map((status, index) => ({ position: index + 1, externalId: status.id }))
      })
      const credits = yield* creditsOf(call, organization.id)
      expect(credits).toMatchObject({ balance: 7, reserved: 0, sums: { grant: 10, reserve: 3, spend: 3 } })
    }))
})

describe("unpublish across server processes", () => {
  it.scopedLive.skipIf(testDatabaseKind !== "postgres")("asked of two processes at once, the thread is taken down once: one answer deletes, each status deleted once", () =>
    Effect.gen(function*() {
      const mastodon = yield* makeMastodonFake()
      const env = publishEnv(yield* freshDatabaseEnv, {})
      const { token } = yield* createUserWithToken(env)
      const [one, two] = yield* Effect.all([startServer(env), startServer(env)], { concurrency: 2 })
      const call = callsAs(one, token)
      const organization = created(yield* call("POST", "/v1/organizations", { name: "Twice asked" }))
      const team = created(yield* call("POST", "/v1/teams", { organizationId: organization.id, name: "Social" }))
      yield* grantCredits(env, organization.id, 10)
      const toot = created(yield* call("POST", `/v1/teams/${team.id}/social-accounts`, {
        provider: "mastodon",
        instanceUrl: mastodon.url,
        accessToken: mastodon.token
      }))
      const post = created(yield* call("POST", `/v1/teams/${team.id}/posts`, { content: "1/2 Oops", thread: [{ content: "2/2 Oops" }] }))
      const postPath = `/v1/teams/${team.id}/posts/${post.id}`
      expect((yield* call("POST", `${postPath}/post-now`, { socialAccountIds: [toot.id] })).body.outcome).toBe("none_failed")

      const answers = yield* Effect.all(
        [one, two, one, two, one, two].map((server) => callsAs(server, token)("POST", `${postPath}/unpublish`, {})),
        { concurrency: "unbounded" }
      )
      expect(answers.filter((answer) => answer.status === 200).map((answer) => answer.body.results)).toEqual([
        [{ socialAccountId: toot.id, status: "deleted", error: null }]
      ])
      for (const answer of answers.filter((answer) => answer.status !== 200)) {
        expect(answer.status).toBe(409)
        expect(["post_deleting", "post_not_published"]).toContain(answer.body.reason)
      }
      expect([...mastodon.deleted].sort()).toEqual(mastodon.statuses.map((status) => status.id).sort())
      expect(mastodon.requests.filter((request) => request.method === "DELETE")).toHaveLength(2)
      expect((yield* callsAs(two, token)("GET", postPath)).body).toMatchObject({ status: "deleted", targets: [{ status: "deleted" }] })
    }))
})
