import { describe, expect, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, HashMap, Layer, Logger, LogLevel } from "effect"
import { randomUUID } from "node:crypto"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { publishEnv, readUntil } from "./support/ProcessPublishing.js"
import { callsAs, createUserWithToken, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"
import { makeTestServer, raw, signUp } from "./support/TestServer.js"
import { eventually } from "./support/Waiting.js"

const attemptFields = ["attempt", "category", "externalId", "finishedAt", "id", "kind", "outcome", "provider", "socialAccountId", "startedAt", "summary"]

// What the server logs from WARN up.
const logged: Array<{ readonly level: string; readonly message: unknown; readonly annotations: Record<string, unknown> }> = []
const capturingLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ annotations, logLevel, message }) =>
    void logged.push({ level: logLevel.label, message, annotations: Object.fromEntries(HashMap.toEntries(annotations)) }))
)

/** Log lines of a target that ended failed, for this post. */
const failuresLoggedFor = (postId: string) =>
  logged.filter(({ annotations, level, message }) =>
    level === "WARN" && String(message).includes("a post failed on an account") && annotations.postId === postId)

/**
 * Schedules may be a second ahead and the scheduler looks five times a second; a target has two attempts, and a
 * provider's Retry-After is waited at most 3 seconds.
 */
const AttemptsServer = makeTestServer(Layer.merge(capturingLogger, Logger.minimumLogLevel(LogLevel.Warning))).pipe(
  Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(
      new Map([
        ["SCHEDULE_MIN_LEAD_SECONDS", "1"],
        ["SCHEDULER_POLL_MS", "200"],
        ["SCHEDULE_MAX_ATTEMPTS", "2"],
        ["PROVIDER_RETRY_AFTER_MAX_SECONDS", "3"]
      ])
    ).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  ))
)

layer(AttemptsServer, { excludeTestServices: true })("publish attempts", (it) => {
  describe("the list", () => {
    it.scoped("lists a post-now's attempts at a failing and a succeeding receiver, then the retry, newest first", () =>
      Effect.gen(function*() {
        const good = yield* makeWebhookReceiver
        const bad = yield* makeWebhookReceiver
        good.answerWith((_event, response) =>
          response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ id: "r-1", url: "https://receiver.example/r-1" })))
        bad.answerWith((_event, response) => response.writeHead(503).end())
        const { call, connect, draft, postNow } = yield* publishingTeam()
        const ok = yield* connect({ provider: "webhook", url: good.url })
        const failing = yield* connect({ provider: "webhook", url: bad.url })
        const post = yield* draft("Attempted twice", [ok.id, failing.id])
        expect((yield* call("GET", `/posts/${post.id}/attempts`)).body).toEqual({ data: [], total: 0, nextCursor: null, prevCursor: null })

        const first = yield* postNow(post.id, [ok.id, failing.id])
        expect(first.body.outcome).toBe("partially_failed")
        // Post-now tries once: its failure that may pass stays retryable, for the caller to publish again.
        expect(first.body.results[1].error).toEqual({ category: "transient", message: expect.stringContaining("503"), retryable: true })

        const listed = yield* call("GET", `/posts/${post.id}/attempts?sortOrder=asc`)
        expect(listed.status).toBe(200)
        expect(listed.body.total).toBe(2)
        for (const attempt of listed.body.data) expect(Object.keys(attempt).sort()).toEqual(attemptFields)
        const byAccount = new Map(listed.body.data.map((attempt: any) => [attempt.socialAccountId, attempt]))
        expect(byAccount.get(ok.id)).toMatchObject({
          provider: "webhook",
          attempt: 1,
          outcome: "published",
          category: null,
          externalId: "r-1",
          summary: "Published as r-1 at https://receiver.example/r-1"
        })
        expect(byAccount.get(failing.id)).toMatchObject({
          provider: "webhook",
          attempt: 1,
          outcome: "failed",
          category: "transient",
          externalId: null,
          summary: "The receiver answered 503 Service Unavailable"
        })
        for (const attempt of listed.body.data) {
          expect(Date.parse(attempt.finishedAt)).toBeGreaterThanOrEqual(Date.parse(attempt.startedAt))
        }

        // Published again to the failing account, which now takes it: its second attempt.
        bad.answerWith((_event, response) => response.writeHead(204).end())
        expect((yield* postNow(post.id, [failing.id])).body.outcome).toBe("none_failed")
        const all = yield* call("GET", `/posts/${post.id}/attempts`)
        expect(all.body.total).toBe(3)
        const times = all.body.data.map((attempt: any) => attempt.startedAt)
        expect(times).toEqual([...times].sort().reverse())
        expect(all.body.data[0]).toMatchObject({ socialAccountId: failing.id, attempt: 2, outcome: "published" })
        expect(all.body.data[0].summary).toMatch(/^Published as msg_/)

        // Filtered by account, oldest first.
        const ofFailing = yield* call("GET", `/posts/${post.id}/attempts?socialAccountId=${failing.id}&sortOrder=asc`)
        expect(ofFailing.body.data.map((attempt: any) => [attempt.attempt, attempt.outcome])).toEqual([[1, "failed"], [2, "published"]])
        expect(ofFailing.body.total).toBe(2)
        const ofNone = yield* call("GET", `/posts/${post.id}/attempts?socialAccountId=${randomUUID()}`)
        expect(ofNone.body).toMatchObject({ data: [], total: 0 })
      }))

    it.scoped("pages by cursor within the bounds of every list; bad queries are 400", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        receiver.answerWith((_event, response) => response.writeHead(500).end())
        const { call, connect, draft, postNow } = yield* publishingTeam()
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        const post = yield* draft("Again and again")
        for (let i = 0; i < 5; i++) expect((yield* postNow(post.id, [hook.id])).body.outcome).toBe("all_failed")

        const seen: Array<string> = []
        let page = yield* call("GET", `/posts/${post.id}/attempts?limit=2`)
        expect(page.body.prevCursor).toBeNull()
        for (;;) {
          expect(page.status).toBe(200)
          expect(page.body.total).toBe(5)
          seen.push(...page.body.data.map((attempt: any) => attempt.id))
          if (page.body.nextCursor === null) break
          page = yield* call("GET", `/posts/${post.id}/attempts?limit=2&cursor=${encodeURIComponent(page.body.nextCursor)}`)
        }
        expect(seen).toHaveLength(5)
        expect(new Set(seen).size).toBe(5)
        // Newest first: attempts 5 to 1.
        const numbers = (yield* call("GET", `/posts/${post.id}/attempts?limit=100`)).body.data.map((attempt: any) => attempt.attempt)
        expect(numbers).toEqual([5, 4, 3, 2, 1])
        // Past the cap: capped, not refused.
        expect((yield* call("GET", `/posts/${post.id}/attempts?limit=1000`)).body.data).toHaveLength(5)

        const other = yield* draft("Another post")
        const cursor = (yield* call("GET", `/posts/${post.id}/attempts?limit=1`)).body.nextCursor
        for (
          const query of [
            "limit=0",
            "limit=-1",
            "limit=two",
            "sortBy=startedAt",
            "sortOrder=up",
            "socialAccountId=not-a-uuid",
            "status=failed",
            "cursor=forged"
          ]
        ) {
          const refused = yield* call("GET", `/posts/${post.id}/attempts?${query}`)
          expect(refused.status, query).toBe(400)
          expect(Object.keys(refused.body).sort(), query).toEqual(expect.arrayContaining(["_tag", "message"]))
        }
        // A cursor of one post's list is refused by another's, and by the same list filtered otherwise.
        expect((yield* call("GET", `/posts/${other.id}/attempts?cursor=${encodeURIComponent(cursor)}`)).status).toBe(400)
        expect((yield* call("GET", `/posts/${post.id}/attempts?socialAccountId=${hook.id}&cursor=${encodeURIComponent(cursor)}`)).status)
          .toBe(400)
      }))

    it.scoped("reads as the post does: members and API keys of the organization; another organization gets 404", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        const { admin, call, connect, draft, organization, postNow, team } = yield* publishingTeam()
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        const post = yield* draft("Seen by the organization alone")
        yield* postNow(post.id, [hook.id])
        const path = `/v1/teams/${team.id}/posts/${post.id}/attempts`

        const key = yield* raw({ method: "POST", path: `/v1/organizations/${organization.id}/api-keys`, token: admin.token, json: { name: "CI" } })
        expect((yield* raw({ method: "GET", path, token: key.body.key })).body.total).toBe(1)
        const member = yield* signUp("Mo Member")
        const added = yield* raw({
          method: "POST",
          path: `/v1/organizations/${organization.id}/members`,
          token: admin.token,
          json: { email: member.user.email, role: "member" }
        })
        expect(added.status).toBe(201)
        expect((yield* raw({ method: "GET", path, token: member.token })).body.total).toBe(1)

        // Another organization: its admin sees neither the team nor the post; its own team does not have the post.
        const outsider = yield* publishingTeam()
        for (const asked of [path, `/v1/teams/${outsider.team.id}/posts/${post.id}/attempts`]) {
          const refused = yield* raw({ method: "GET", path: asked, token: outsider.admin.token })
          expect(refused.status, asked).toBe(404)
          expect(refused.body._tag).toBe("NotFound")
          expect(JSON.stringify(refused.body)).not.toContain(hook.id)
        }
        const unknown = yield* call("GET", `/posts/${randomUUID()}/attempts`)
        expect(unknown).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
        expect((yield* raw({ method: "GET", path })).status).toBe(401)
      }))
  })

  describe("failures for good", () => {
    it.scoped("a failure for good is logged at WARN once, with the post, account, provider and category, and no secret", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        receiver.answerWith((_event, response) => response.writeHead(503).end())
        const { admin, connect, draft, postNow } = yield* publishingTeam()
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        const post = yield* draft("Logged when it fails")
        yield* postNow(post.id, [hook.id])
        const lines = failuresLoggedFor(post.id)
        expect(lines).toHaveLength(1)
        expect(lines[0].annotations).toMatchObject({
          postId: post.id,
          socialAccountId: hook.id,
          provider: "webhook",
          category: "transient",
          error: "The receiver answered 503 Service Unavailable",
          retryable: true
        })
        const text = JSON.stringify(logged)
        expect(text).not.toContain(hook.signingSecret!)
        expect(text).not.toContain(admin.token)
      }))

    it.scoped("refused content and refused credentials end the target, not retryable, and are logged", () =>
      Effect.gen(function*() {
        const refusing = yield* makeWebhookReceiver
        refusing.answerWith((_event, response) => response.writeHead(422).end())
        const locked = yield* makeWebhookReceiver
        locked.answerWith((_event, response) => response.writeHead(401).end())
        const { call, connect, draft, postNow } = yield* publishingTeam()
        const content = yield* connect({ provider: "webhook", url: refusing.url })
        const auth = yield* connect({ provider: "webhook", url: locked.url })
        const post = yield* draft("Refused twice")
        const answer = yield* postNow(post.id, [content.id, auth.id])
        expect(answer.body.outcome).toBe("all_failed")
        expect(answer.body.results.map((result: any) => result.error)).toEqual([
          { category: "invalid_content", message: expect.stringContaining("422"), retryable: false },
          { category: "auth", message: expect.stringContaining("401"), retryable: false }
        ])
        const shown = (yield* call("GET", `/posts/${post.id}`)).body
        expect(shown.status).toBe("failed")
        const targets = new Map(shown.targets.map((target: any) => [target.socialAccountId, target]))
        expect(targets.get(content.id)).toMatchObject({ status: "failed", error: { category: "invalid_content", retryable: false } })
        expect(targets.get(auth.id)).toMatchObject({ status: "failed", error: { category: "auth", retryable: false } })
        expect(failuresLoggedFor(post.id).map(({ annotations }) => [annotations.socialAccountId, annotations.category]).sort())
          .toEqual([[content.id, "invalid_content"], [auth.id, "auth"]].sort())
        // Refused before anything is sent: the account to reconnect fails at once, logged, with no attempt.
        const again = yield* draft("Not even sent")
        const refused = yield* postNow(again.id, [auth.id])
        expect(refused.body.results[0].error).toMatchObject({ category: "auth", retryable: false })
        expect((yield* call("GET", `/posts/${again.id}/attempts`)).body.total).toBe(0)
        expect(failuresLoggedFor(again.id).map(({ annotations }) => annotations.category)).toEqual(["auth"])
      }))

    it.scoped("a scheduled target is retryable while it will be tried again, and not once it is given up on", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        // First a wait of 3 seconds asked, then a failure: two attempts, the last of them.
        receiver.answerWith((_event, response) =>
          receiver.received.length === 1 ? response.writeHead(429, { "retry-after": "3" }).end() : response.writeHead(503).end())
        const { call, connect, draft, scheduleSoon } = yield* publishingTeam()
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        const post = yield* draft("Tried twice, then given up")
        expect((yield* scheduleSoon(post.id, [hook.id], 2)).answer.status).toBe(200)

        const waiting = yield* eventually(call("GET", `/posts/${post.id}`), (response) => response.body.targets[0]?.error !== null && response.body.targets[0]?.error !== undefined)
        expect(waiting.body.targets[0]).toMatchObject({ status: "pending", error: { category: "rate_limited", retryable: true } })
        expect(failuresLoggedFor(post.id)).toEqual([])

        const failed = yield* eventually(call("GET", `/posts/${post.id}`), (response) => response.body.status === "failed")
        expect(failed.body.targets[0]).toMatchObject({ status: "failed", error: { category: "transient", retryable: false } })
        expect(failed.body.targets[0].error.message).toMatch(/gave up after 2 attempts/)
        const attempts = (yield* call("GET", `/posts/${post.id}/attempts?sortOrder=asc`)).body.data
        expect(attempts.map((attempt: any) => [attempt.attempt, attempt.outcome, attempt.category])).toEqual([
          [1, "failed", "rate_limited"],
          [2, "failed", "transient"]
        ])
        expect(attempts[0].summary).toBe("The receiver answered 429 Too Many Requests")
        const lines = failuresLoggedFor(post.id)
        expect(lines).toHaveLength(1)
        expect(lines[0].annotations).toMatchObject({ socialAccountId: hook.id, category: "transient", retryable: false })
      }))
  })
})

describe("publish attempts, from the built server", () => {
  it.scopedLive("a failure for good is one JSON line at WARN on stdout, with no secret", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      receiver.answerWith((_event, response) => response.writeHead(503).end())
      const env = publishEnv(yield* freshDatabaseEnv, { CREDIT_COSTS: "{}" })
      const { token } = yield* createUserWithToken(env)
      const server = yield* startServer(env)
      const call = callsAs(server, token)
      const organization = (yield* call("POST", "/v1/organizations", { name: "Logged" })).body
      const team = (yield* call("POST", "/v1/teams", { organizationId: organization.id, name: "Social" })).body
      const hook = (yield* call("POST", `/v1/teams/${team.id}/social-accounts`, { provider: "webhook", url: receiver.url })).body
      const post = (yield* call("POST", `/v1/teams/${team.id}/posts`, { content: "Failing in the log" })).body
      const answer = yield* call("POST", `/v1/teams/${team.id}/posts/${post.id}/post-now`, { socialAccountIds: [hook.id] })
      expect(answer.body.outcome).toBe("all_failed")
      const isFailureLine = (line: string) => line.includes("a post failed on an account")
      yield* readUntil(Effect.sync(() => server.lines), (lines) => lines.some(isFailureLine))
      const line = JSON.parse(server.lines.find(isFailureLine)!)
      expect(line).toMatchObject({
        logLevel: "WARN",
        message: "Publishing: a post failed on an account",
        annotations: { postId: post.id, socialAccountId: hook.id, provider: "webhook", category: "transient", retryable: true }
      })
      const output = server.lines.join("\n")
      expect(output).not.toContain(hook.signingSecret)
      expect(output).not.toContain(token)
    }))
})
