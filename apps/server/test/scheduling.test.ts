import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { randomUUID } from "node:crypto"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { makeTestServer, raw, TestServer } from "./support/TestServer.js"
import { eventually, inSeconds } from "./support/Waiting.js"

/** A server whose schedules may be a second ahead, and whose scheduler looks for due work five times a second. */
const QuickServer = makeTestServer(Logger.minimumLogLevel(LogLevel.Warning)).pipe(
  Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(new Map([["SCHEDULE_MIN_LEAD_SECONDS", "1"], ["SCHEDULER_POLL_MS", "200"]])).pipe(
      ConfigProvider.orElse(() => ConfigProvider.fromEnv())
    )
  ))
)

layer(QuickServer, { excludeTestServices: true })("scheduling", (it) => {
  it.scoped("publishes at the time to each account, holding the credits until then", () =>
    Effect.gen(function*() {
      const mastodon = yield* makeMastodonFake()
      const receiver = yield* makeWebhookReceiver
      const { call, connect, credit, draft, scheduleSoon } = yield* publishingTeam(5)
      const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const post = yield* draft("At the stroke of the hour")
      const { answer: scheduled, scheduledAt: at } = yield* scheduleSoon(post.id, [toot.id, hook.id], 2)
      expect(scheduled.status).toBe(200)
      expect(scheduled.body).toEqual({
        postId: post.id,
        scheduledAt: new Date(at).toISOString(),
        results: [
          { socialAccountId: toot.id, status: "scheduled", error: null },
          { socialAccountId: hook.id, status: "scheduled", error: null }
        ],
        outcome: "none_failed"
      })
      const waiting = (yield* call("GET", `/posts/${post.id}`)).body
      expect(waiting).toMatchObject({ status: "scheduled", scheduledAt: new Date(at).toISOString() })
      expect(waiting.targets.map((target: any) => target.status)).toEqual(["pending", "pending"])
      expect(yield* credit).toEqual({ balance: 5, reserved: 1, available: 4 })
      expect(mastodon.statuses).toEqual([])
      // Not due yet: nothing waits to be taken, and nothing is being sent.
      const health = (yield* raw({ method: "GET", path: "/health" })).body
      expect(health.scheduler).toEqual({ sending: 0, concurrency: 16, dueWaiting: 0, oldestDueSeconds: null })

      const done = yield* eventually(call("GET", `/posts/${post.id}`), (response) => response.body.status === "published")
      expect(done.body.targets.map((target: any) => [target.socialAccountId, target.status]).sort()).toEqual([
        [toot.id, "published"],
        [hook.id, "published"]
      ].sort())
      const publishedAt = Math.min(...done.body.targets.map((target: any) => Date.parse(target.publishedAt)))
      expect(publishedAt).toBeGreaterThanOrEqual(Date.parse(at))
      expect(mastodon.statuses).toEqual([{ id: expect.any(String), text: "At the stroke of the hour", idempotencyKey: `${post.id}:${toot.id}` }])
      expect(receiver.received).toHaveLength(1)
      expect(yield* credit).toEqual({ balance: 4, reserved: 0, available: 4 })
      const queue = yield* call("GET", "/posts?status=scheduled")
      expect(queue.body.total).toBe(0)
    }))

  it.scoped("rescheduling moves the post: nothing at the old time, once at the new one", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { call, connect, draft, scheduleSoon } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const post = yield* draft("Moved")
      const { answer: first, scheduledAt: firstAt } = yield* scheduleSoon(post.id, [hook.id], 3)
      expect(first.status).toBe(200)
      const later = inSeconds(7)
      const moved = yield* call("POST", `/posts/${post.id}/schedule`, { socialAccountIds: [hook.id], scheduledAt: later })
      expect(moved.body.scheduledAt).toBe(new Date(later).toISOString())
      // Past the first time (by this clock, the server's), not yet the second: nothing was sent.
      yield* Effect.sleep(`${Math.max(0, Date.parse(firstAt) + 1500 - Date.now())} millis`)
      expect(receiver.received).toEqual([])
      expect((yield* call("GET", `/posts/${post.id}`)).body.status).toBe("scheduled")
      yield* eventually(Effect.sync(() => receiver.received.length), (count) => count > 0)
      yield* Effect.sleep("1 second")
      expect(receiver.received).toHaveLength(1)
      expect((yield* call("GET", `/posts/${post.id}`)).body.status).toBe("published")
    }))

  it.scoped("unscheduling returns the post to draft and its credits, and nothing is published", () =>
    Effect.gen(function*() {
      const mastodon = yield* makeMastodonFake()
      const { call, connect, credit, draft, organization, scheduleSoon } = yield* publishingTeam(3)
      const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
      const post = yield* draft("Never mind")
      yield* scheduleSoon(post.id, [toot.id], 2)
      expect(yield* credit).toMatchObject({ reserved: 1 })
      const cancelled = yield* call("POST", `/posts/${post.id}/unschedule`)
      expect(cancelled.status).toBe(200)
      expect(cancelled.body).toMatchObject({ id: post.id, status: "draft", scheduledAt: null, targets: [] })
      expect(yield* credit).toEqual({ balance: 3, reserved: 0, available: 3 })
      yield* Effect.sleep("3 seconds")
      expect(mastodon.statuses).toEqual([])
      expect((yield* call("POST", `/posts/${post.id}/unschedule`)).body).toMatchObject({ _tag: "Conflict" })
      const sql = yield* SqlClient.SqlClient
      const ledger = yield* sql<{ kind: string }>`SELECT kind FROM credit_transactions
        WHERE organization_id = ${organization.id} ORDER BY created_at, kind DESC`
      expect(ledger.map((entry) => entry.kind)).toEqual(["reserve", "release"])
    }))

  it.scoped("a transient failure is retried with backoff and succeeds; a permanent one fails and gives the credits back", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const mastodon = yield* makeMastodonFake({ maxCharacters: 500 })
      const { call, connect, credit, draft, scheduleSoon } = yield* publishingTeam(2)
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      let answered = 0
      receiver.answerWith((_event, response) => response.writeHead(answered++ === 0 ? 503 : 204).end())
      const flaky = yield* draft("Second time lucky")
      yield* scheduleSoon(flaky.id, [hook.id], 2)
      const published = yield* eventually(call("GET", `/posts/${flaky.id}`), (response) => response.body.status === "published")
      expect(published.body.status).toBe("published")
      expect(receiver.received).toHaveLength(2)
      // Backoff: the second attempt came at least a second after the first.
      const [first, second] = receiver.received.map((event) => Number(event.headers["webhook-timestamp"]))
      expect(second - first).toBeGreaterThanOrEqual(1)
      const sql = yield* SqlClient.SqlClient
      const attempts = yield* sql<{ attempt: number; result: string }>`SELECT attempt, result FROM publish_attempts
        WHERE post_id = ${flaky.id} ORDER BY attempt`
      expect(attempts).toEqual([{ attempt: 1, result: "failed" }, { attempt: 2, result: "published" }])

      const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
      mastodon.answerNext({ status: 422, body: { error: "Validation failed: Text is invalid" } })
      const doomed = yield* draft("Refused")
      yield* scheduleSoon(doomed.id, [toot.id], 2)
      expect(yield* credit).toMatchObject({ reserved: 1 })
      const failed = yield* eventually(call("GET", `/posts/${doomed.id}`), (response) => response.body.status === "failed")
      expect(failed.body.targets[0]).toMatchObject({
        status: "failed",
        error: { category: "invalid_content", message: "Validation failed: Text is invalid", retryable: false },
        creditsSpent: 0
      })
      expect(yield* credit).toEqual({ balance: 2, reserved: 0, available: 2 })
    }))

  it.scoped("fails an account before scheduling for what it would refuse; 402 when short; the queue by time", () =>
    Effect.gen(function*() {
      const mastodon = yield* makeMastodonFake({ maxCharacters: 10 })
      const receiver = yield* makeWebhookReceiver
      const { call, connect, draft } = yield* publishingTeam(0)
      const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const long = yield* draft("Too long for a ten-character instance")
      const partly = yield* call("POST", `/posts/${long.id}/schedule`, { socialAccountIds: [toot.id, hook.id], scheduledAt: inSeconds(60) })
      expect(partly.body).toMatchObject({
        outcome: "partially_failed",
        results: [
          { socialAccountId: toot.id, status: "failed", error: { category: "invalid_content" } },
          { socialAccountId: hook.id, status: "scheduled", error: null }
        ]
      })
      const short = yield* draft("Short")
      const broke = yield* call("POST", `/posts/${short.id}/schedule`, { socialAccountIds: [toot.id], scheduledAt: inSeconds(60) })
      expect(broke).toMatchObject({ status: 402, body: { _tag: "PaymentRequired" } })
      expect((yield* call("GET", `/posts/${short.id}`)).body).toMatchObject({ status: "draft", scheduledAt: null })

      const soon = yield* draft("Sooner")
      yield* call("POST", `/posts/${soon.id}/schedule`, { socialAccountIds: [hook.id], scheduledAt: inSeconds(30) })
      const queue = yield* call("GET", "/posts?status=scheduled&sortBy=scheduledAt&sortOrder=asc")
      expect(queue.body.data.map((post: any) => post.id)).toEqual([soon.id, long.id])
      // Publishing a scheduled post now is refused: it is unscheduled or moved first.
      expect((yield* call("POST", `/posts/${soon.id}/post-now`, { socialAccountIds: [hook.id] })).status).toBe(409)
      for (const id of [soon.id, long.id]) expect((yield* call("POST", `/posts/${id}/unschedule`)).status).toBe(200)
    }))

  it.scoped("an Idempotency-Key replays a schedule; the time must have an offset and lie within a year", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { call, connect, draft } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const post = yield* draft("Once")
      const key = randomUUID()
      const body = { socialAccountIds: [hook.id], scheduledAt: inSeconds(60) }
      const first = yield* call("POST", `/posts/${post.id}/schedule`, body, { "idempotency-key": key })
      const again = yield* call("POST", `/posts/${post.id}/schedule`, body, { "idempotency-key": key })
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      expect(again.body).toEqual(first.body)
      const sql = yield* SqlClient.SqlClient
      const [{ version }] = yield* sql<{ version: number }>`SELECT schedule_version AS version FROM posts WHERE id = ${post.id}`
      expect(version).toBe(1)

      for (const scheduledAt of [inSeconds(-60), inSeconds(367 * 24 * 3600)]) {
        const refused = yield* call("POST", `/posts/${post.id}/schedule`, { socialAccountIds: [hook.id], scheduledAt })
        expect(refused).toMatchObject({ status: 400, body: { _tag: "BadRequest" } })
      }
      for (const scheduledAt of ["2030-01-01T10:00:00", "tomorrow", "2030-02-30T10:00:00Z"]) {
        const refused = yield* call("POST", `/posts/${post.id}/schedule`, { socialAccountIds: [hook.id], scheduledAt })
        expect(refused.body._tag).toBe("HttpApiDecodeError")
      }
      expect((yield* call("GET", `/posts/${post.id}`)).body.status).toBe("scheduled")
    }))
})

layer(TestServer, { excludeTestServices: true })("scheduling with the default lead", (it) => {
  describe("scheduledAt", () => {
    it.scoped("is at least 10 seconds ahead", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        const { call, connect, draft, scheduleSoon } = yield* publishingTeam()
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        const post = yield* draft("Soon")
        const tooSoon = yield* call("POST", `/posts/${post.id}/schedule`, { socialAccountIds: [hook.id], scheduledAt: inSeconds(9) })
        expect(tooSoon.body).toEqual({
          _tag: "BadRequest",
          reason: "scheduled_at_out_of_range",
          message: "scheduledAt must be at least 10 seconds and at most a year ahead"
        })
        // Past the bound is accepted (asked again only when a busy machine delivered it too late to be).
        const { answer: enough } = yield* scheduleSoon(post.id, [hook.id], 11)
        expect(enough.status).toBe(200)
        expect((yield* call("POST", `/posts/${post.id}/unschedule`)).status).toBe(200)
      }))
  })

  it.scoped("slot \"next\" takes the team's next free posting slot, a different one for each post, even at once", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { call, connect, draft } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const post = yield* draft("In the next slot")
      const none = yield* call("POST", `/posts/${post.id}/schedule`, { socialAccountIds: [hook.id], slot: "next" })
      expect(none).toMatchObject({
        status: 400,
        body: { _tag: "BadRequest", message: "This team has no posting slots: set some, or give scheduledAt" }
      })
      expect((yield* call("GET", `/posts/${post.id}`)).body).toMatchObject({ status: "draft", scheduledAt: null, targets: [] })

      // A slot at midnight every day of the week, in UTC (the team has no timezone).
      const everyMidnight = [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({ weekday, time: "00:00" }))
      expect((yield* call("PUT", "/posting-slots", { slots: everyMidnight })).status).toBe(200)
      const today = new Date()
      const midnightsAhead = (days: number) =>
        new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() + days)).toISOString()
      const first = yield* call("POST", `/posts/${post.id}/schedule`, { socialAccountIds: [hook.id], slot: "next" })
      expect(first.body).toMatchObject({ postId: post.id, scheduledAt: midnightsAhead(1), outcome: "none_failed" })

      const others = yield* Effect.forEach([1, 2, 3, 4], (i) => draft(`Also in a slot ${i}`))
      const slots = yield* Effect.forEach(others, (other) =>
        Effect.map(
          call("POST", `/posts/${other.id}/schedule`, { socialAccountIds: [hook.id], slot: "next" }),
          (response) => response.body.scheduledAt as string
        ), { concurrency: "unbounded" })
      expect([...slots].sort()).toEqual([2, 3, 4, 5].map(midnightsAhead))
    }))
})

/** A server that waits at most a second however long a provider asks, and gives a target two attempts. */
const PatientServer = makeTestServer(Logger.minimumLogLevel(LogLevel.Warning)).pipe(
  Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(
      new Map([
        ["SCHEDULE_MIN_LEAD_SECONDS", "1"],
        ["SCHEDULER_POLL_MS", "200"],
        ["SCHEDULE_MAX_ATTEMPTS", "2"],
        ["PROVIDER_RETRY_AFTER_MAX_SECONDS", "1"],
        ["CREDIT_COSTS", JSON.stringify({ webhook: 1 })]
      ])
    ).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  ))
)

layer(PatientServer, { excludeTestServices: true })("scheduling with a cap on Retry-After", (it) => {
  it.scoped("a Retry-After of ages waits the cap; past the attempts the account fails for good, its credit given back", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { admin, call, connect, credit, draft, organization, scheduleSoon } = yield* publishingTeam(3)
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      // Far beyond any sane wait: 10^20 seconds, then the last day of the year 9999.
      const asked = ["100000000000000000000", "Fri, 31 Dec 9999 23:59:59 GMT"]
      receiver.answerWith((_event, response) =>
        response.writeHead(429, { "retry-after": asked[Math.min(receiver.received.length - 1, 1)] }).end())
      const post = yield* draft("Rate limited forever")
      expect((yield* scheduleSoon(post.id, [hook.id], 2)).answer.status).toBe(200)
      const failed = yield* eventually(call("GET", `/posts/${post.id}`), (response) => response.body.status === "failed")
      expect(failed.body.targets[0]).toMatchObject({
        status: "failed",
        error: { category: "rate_limited", retryable: false },
        creditsSpent: 0
      })
      expect(failed.body.targets[0].error.message).toMatch(/gave up after 2 attempts/)
      expect(receiver.received).toHaveLength(2)
      const [first, second] = receiver.received.map((event) => Number(event.headers["webhook-timestamp"]))
      // The cap, not the asked wait: the second attempt came at all (within the wait above), no sooner than a second on.
      expect(second - first).toBeGreaterThanOrEqual(1)
      expect(yield* credit).toEqual({ balance: 3, reserved: 0, available: 3 })
      const ledger = yield* raw({
        method: "GET",
        path: `/v1/organizations/${organization.id}/credits/transactions`,
        token: admin.token
      })
      // Held once, given back once.
      expect(ledger.body.data.map((entry: any) => entry.kind).sort()).toEqual(["release", "reserve"])
    }))
})
