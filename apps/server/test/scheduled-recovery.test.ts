import { describe, expect, it, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import type { ServerResponse } from "node:http"
import { accountOf, creditsOf, deliveries, publishEnv, publishingSetup, readUntil } from "./support/ProcessPublishing.js"
import { makeWebhookReceiver, publishingTeam, type ReceivedEvent } from "./support/Publishing.js"
import { callsAs, type ServerProcess, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, testDatabaseKind } from "./support/TestDatabase.js"
import { makeTestServer } from "./support/TestServer.js"
import { eventually } from "./support/Waiting.js"

/** What a receiver does with one call: nothing (the send hangs), or answers with this status. */
type Step = "hang" | 503 | 429 | 200

/** Answers the receiver's calls by `steps`, one a call, in order; the last step repeats. */
const answerBy = (received: ReadonlyArray<ReceivedEvent>, steps: ReadonlyArray<Step>) =>
(_event: ReceivedEvent, response: ServerResponse) => {
  const step = steps[Math.min(received.length, steps.length) - 1]
  if (step === "hang") return
  if (step === 200) return void response.writeHead(200, { "content-type": "application/json" }).end("{}")
  response.writeHead(step, step === 429 ? { "retry-after": "1" } : {}).end()
}

const timeoutSeconds = 1
const recoverySeconds = 7
const maxAttempts = 3

/**
 * A send is in doubt after a second, taken over 7 s after it began (the least the timeout allows), a target has
 * three attempts, and a provider's Retry-After is waited at most 2 s: times shortened, not asserted.
 */
const RecoveryServer = makeTestServer(Logger.minimumLogLevel(LogLevel.Error)).pipe(
  Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(
      new Map([
        ["SCHEDULE_MIN_LEAD_SECONDS", "1"],
        ["SCHEDULER_POLL_MS", "200"],
        ["PUBLISH_TIMEOUT_SECONDS", String(timeoutSeconds)],
        ["PUBLISH_RECOVERY_SECONDS", String(recoverySeconds)],
        ["SCHEDULE_MAX_ATTEMPTS", String(maxAttempts)],
        ["PROVIDER_RETRY_AFTER_MAX_SECONDS", "2"]
      ])
    ).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  ))
)


layer(RecoveryServer, { excludeTestServices: true })("a target the recovery sends again", (it) => {
  /** A post scheduled to one webhook account whose receiver answers by `steps`; its end, and its attempts in order. */
  const scheduledThrough = (steps: ReadonlyArray<Step>) =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      receiver.answerWith(answerBy(receiver.received, steps))
      const { call, connect, draft, scheduleSoon } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const post = yield* draft("Sent whatever the receiver does")
      expect((yield* scheduleSoon(post.id, [hook.id], 2)).answer.status).toBe(200)
      const ended = yield* eventually(
        call("GET", `/posts/${post.id}`),
        (answer) => answer.body.status === "published" || answer.body.status === "failed"
      )
      const attempts = (yield* call("GET", `/posts/${post.id}/attempts?sortOrder=asc`)).body.data
      return { receiver, hook, ended: ended.body, attempts: attempts.map((attempt: any) => [attempt.attempt, attempt.outcome, attempt.category]) }
    })

  it.scoped("scheduled, no answer then 503 then 200: tried again after the 503, and published", () =>
    Effect.gen(function*() {
      const { attempts, ended, hook, receiver } = yield* scheduledThrough(["hang", 503, 200])
      expect(ended).toMatchObject({ status: "published", targets: [{ socialAccountId: hook.id, status: "published", error: null }] })
      expect(attempts).toEqual([[1, "in_doubt", "transient"], [2, "failed", "transient"], [3, "published", null]])
      // One publish, as a receiver that de-duplicates sees it: every call under the same webhook-id.
      expect(new Set(deliveries(receiver.received, hook.id)).size).toBe(1)
    }))

  it.scoped("scheduled, no answer then 429 then 200: tried again after the wait asked, and published", () =>
    Effect.gen(function*() {
      const { attempts, ended, hook } = yield* scheduledThrough(["hang", 429, 200])
      expect(ended).toMatchObject({ status: "published", targets: [{ socialAccountId: hook.id, status: "published", error: null }] })
      expect(attempts).toEqual([[1, "in_doubt", "transient"], [2, "failed", "rate_limited"], [3, "published", null]])
    }))

  it.scoped("scheduled, no answer then 503 until SCHEDULE_MAX_ATTEMPTS: given up on, not retryable", () =>
    Effect.gen(function*() {
      const { attempts, ended, hook, receiver } = yield* scheduledThrough(["hang", 503])
      expect(ended).toMatchObject({
        status: "failed",
        targets: [{
          socialAccountId: hook.id,
          status: "failed",
          error: { category: "transient", retryable: false, message: expect.stringContaining(`gave up after ${maxAttempts} attempts`) }
        }]
      })
      expect(attempts).toEqual([[1, "in_doubt", "transient"], [2, "failed", "transient"], [3, "failed", "transient"]])
      expect(receiver.received).toHaveLength(maxAttempts)
    }))

  it.scoped("a post-now's target keeps post-now's rule: no answer then 503 ends it failed at once, retryable", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      receiver.answerWith(answerBy(receiver.received, ["hang", 503, 200]))
      const { call, connect, draft, postNow } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const post = yield* draft("Sent now")
      expect((yield* postNow(post.id, [hook.id])).body.results).toMatchObject([{ status: "pending" }])
      const ended = yield* eventually(call("GET", `/posts/${post.id}`), (answer) => answer.body.status !== "publishing")
      expect(ended.body.targets).toMatchObject([{
        socialAccountId: hook.id,
        status: "failed",
        error: { category: "transient", retryable: true, message: expect.not.stringContaining("gave up") }
      }])
      const attempts = (yield* call("GET", `/posts/${post.id}/attempts?sortOrder=asc`)).body.data
      expect(attempts.map((attempt: any) => [attempt.attempt, attempt.outcome])).toEqual([[1, "in_doubt"], [2, "failed"]])
      expect(receiver.received).toHaveLength(2)
    }))
})

/** Schedules `postId` about two seconds ahead, asking again for later when a busy machine made that too soon. */
const scheduleSoon = (call: ReturnType<typeof callsAs>, teamId: string, postId: string, socialAccountIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    for (let tries = 1;; tries++) {
      const scheduledAt = new Date(Date.now() + 2000).toISOString()
      const answer = yield* call("POST", `/v1/teams/${teamId}/posts/${postId}/schedule`, { socialAccountIds, scheduledAt })
      if (answer.status === 200 || tries === 10 || !String(answer.body?.message).startsWith("scheduledAt must be at least")) {
        return answer
      }
    }
  })

describe("a scheduled send in flight in a process killed with SIGKILL", () => {
  it.scopedLive(
    testDatabaseKind === "postgres"
      ? "is taken over by another process, tried again after a 503, and published; its credit spent once"
      : "is taken over by the restarted process, tried again after a 503, and published; its credit spent once",
    () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        receiver.answerWith(answerBy(receiver.received, ["hang", 503, 200]))
        // The first send is killed while it waits for its answer (or, on a very busy machine, once it is in doubt:
        // its attempt is left unfinished the same way).
        const env = publishEnv(yield* freshDatabaseEnv, {
          SCHEDULE_MIN_LEAD_SECONDS: "1",
          SCHEDULER_POLL_MS: "250",
          PUBLISH_TIMEOUT_SECONDS: "10",
          PUBLISH_RECOVERY_SECONDS: "16",
          SCHEDULE_MAX_ATTEMPTS: "3"
        })
        const initial = 5
        const { accountIds: [account], organizationId, postId, teamId, token } = yield* publishingSetup(env, receiver.url, 1, initial)
        const first = yield* startServer(env)
        expect((yield* scheduleSoon(callsAs(first, token), teamId, postId, [account])).status).toBe(200)
        yield* readUntil(Effect.sync(() => receiver.received.length), (calls) => calls === 1)
        expect(receiver.received.map(accountOf)).toEqual([account])

        // On PostgreSQL another process runs beside the first when it dies; the embedded database is opened by
        // one process at a time: it restarts.
        let second: ServerProcess
        if (testDatabaseKind === "postgres") {
          second = yield* startServer(env)
          first.child.kill("SIGKILL")
          yield* Effect.promise(() => first.exited)
        } else {
          first.child.kill("SIGKILL")
          yield* Effect.promise(() => first.exited)
          second = yield* startServer(env)
        }
        const call = callsAs(second, token)
        const ended = yield* readUntil(
          call("GET", `/v1/teams/${teamId}/posts/${postId}`),
          (answer) => answer.body.status === "published" || answer.body.status === "failed"
        )
        expect(ended.body).toMatchObject({ status: "published", targets: [{ socialAccountId: account, status: "published", error: null, creditsSpent: 1 }] })
        const attempts = (yield* call("GET", `/v1/teams/${teamId}/posts/${postId}/attempts?sortOrder=asc`)).body.data
        expect(attempts.map((attempt: any) => [attempt.attempt, attempt.outcome, attempt.category])).toEqual([
          [1, "in_doubt", "transient"],
          [2, "failed", "transient"],
          [3, "published", null]
        ])
        const ids = deliveries(receiver.received, account)
        expect(ids).toHaveLength(3)
        expect(new Set(ids).size).toBe(1)
        const credits = yield* creditsOf(call, organizationId)
        expect(credits).toMatchObject({ balance: initial - 1, reserved: 0, sums: { grant: initial, reserve: 1, spend: 1 } })
        expect(credits.sums.release).toBeUndefined()
      })
  )
})
