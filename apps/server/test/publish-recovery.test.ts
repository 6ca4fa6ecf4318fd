import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ServerResponse } from "node:http"
import { accountOf, creditsOf, deliveries, publishEnv, publishingSetup, readUntil } from "./support/ProcessPublishing.js"
import { makeWebhookReceiver } from "./support/Publishing.js"
import { callsAs, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, testDatabaseKind } from "./support/TestDatabase.js"

/** Answers a webhook call 200. */
const answerOk = (response: ServerResponse) => response.writeHead(200, { "content-type": "application/json" }).end("{}")

describe("a post-now whose process dies (SIGKILL) during its sends", () => {
  it.scopedLive("is finished by the restarted server (within PUBLISH_RECOVERY_SECONDS, at once on the embedded database), every hold settled once; its Idempotency-Key then replays the final answer", () =>
    Effect.gen(function*() {
      // On the embedded database a recovery time far beyond the test's: finishing at all proves it was not waited for.
      const recoverySeconds = testDatabaseKind === "embedded" ? 600 : 20
      const receiver = yield* makeWebhookReceiver
      const env = publishEnv(yield* freshDatabaseEnv, { PUBLISH_TIMEOUT_SECONDS: "3", PUBLISH_RECOVERY_SECONDS: String(recoverySeconds) })
      const initial = 10
      const { accountIds, organizationId, postId, teamId, token } = yield* publishingSetup(env, receiver.url, 3, initial)
      const slow = accountIds[2]
      // The slow account's first call gets no answer before the process dies; every other call is answered at once.
      receiver.answerWith((event, response) => {
        if (accountOf(event) === slow && deliveries(receiver.received, slow).length === 1) return
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })

      const first = yield* startServer(env)
      const postNowPath = `/v1/teams/${teamId}/posts/${postId}/post-now`
      const key = "kill-mid-post-now"
      void fetch(`${first.base}${postNowPath}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "idempotency-key": key },
        body: JSON.stringify({ socialAccountIds: accountIds })
      }).catch(() => undefined)
      const before = yield* readUntil(
        callsAs(first, token)("GET", `/v1/teams/${teamId}/posts/${postId}`),
        (answer) =>
          receiver.received.length === 3 &&
          answer.body.targets.filter((target: { status: string }) => target.status === "published").length === 2
      )
      expect(receiver.received.map(accountOf).sort()).toEqual([...accountIds].sort())
      expect(before.body.status).toBe("publishing")
      first.child.kill("SIGKILL")
      yield* Effect.promise(() => first.exited)

      const second = yield* startServer(env)
      const call = callsAs(second, token)
      if (testDatabaseKind === "postgres") {
        // Another process could still be sending it: the slow send is taken over once its time is up. Until
        // then the key's request has not ended, and the account is busy.
        expect(deliveries(receiver.received, slow)).toHaveLength(1)
        const early = yield* call("POST", postNowPath, { socialAccountIds: accountIds }, { "idempotency-key": key })
        expect(early).toMatchObject({ status: 409, body: { _tag: "Conflict" } })
        const otherKey = yield* call("POST", postNowPath, { socialAccountIds: [slow] }, { "idempotency-key": "another-key" })
        expect(otherKey).toMatchObject({ status: 409, body: { _tag: "Conflict", message: expect.stringContaining("being published") } })
        expect(yield* creditsOf(call, organizationId)).toMatchObject({ balance: initial - 2, reserved: 1 })
        expect(deliveries(receiver.received, slow)).toHaveLength(1)
      }

      const after = yield* readUntil(
        call("GET", `/v1/teams/${teamId}/posts/${postId}`),
        (answer) => answer.body.status !== "publishing",
        // The only process on its data folder finishes what the dead one left at once, without waiting out the
        // send's time (which ends at least recoverySeconds - 5 s after this restart): well before, on a busy machine.
        testDatabaseKind === "embedded" ? recoverySeconds / 2 : recoverySeconds + 180
      )
      expect(after.body.status).toBe("published")
      expect(after.body.targets).toHaveLength(3)
      for (const target of after.body.targets) expect(target).toMatchObject({ status: "published", error: null, creditsSpent: 1 })
      // Every account got the post under one webhook-id, the slow one twice (the repeat a receiver can tell).
      for (const accountId of accountIds) {
        const ids = deliveries(receiver.received, accountId)
        expect(ids.length).toBe(accountId === slow ? 2 : 1)
        expect(new Set(ids).size).toBe(1)
      }
      const credits = yield* creditsOf(call, organizationId)
      expect(credits).toMatchObject({ balance: initial - 3, reserved: 0, sums: { grant: initial, reserve: 3, spend: 3 } })
      expect(credits.sums.release).toBeUndefined()
      for (const accountId of accountIds) expect(credits.perAccount[accountId]).toEqual({ reserve: 1, spend: 1 })

      const replayed = yield* call("POST", postNowPath, { socialAccountIds: accountIds }, { "idempotency-key": key })
      expect(replayed).toMatchObject({
        status: 200,
        replayed: "true",
        body: {
          postId,
          outcome: "none_failed",
          results: accountIds.map((socialAccountId) => ({ socialAccountId, status: "published", error: null, creditsSpent: 1 }))
        }
      })
      const again = yield* call("POST", postNowPath, { socialAccountIds: accountIds }, { "idempotency-key": key })
      expect(again).toMatchObject({ status: 200, replayed: "true", text: replayed.text })
      expect(receiver.received).toHaveLength(4)
      expect(yield* creditsOf(call, organizationId)).toEqual(credits)
    }))
})

describe("PUBLISH_TIMEOUT_SECONDS", () => {
  it.scopedLive("answers a post-now within one timeout; the send it cut stays pending with its credit held, and the recovery's repeat (same webhook-id) spends it once", () =>
    Effect.gen(function*() {
      const timeoutSeconds = 5
      const recoverySeconds = 11
      const receiver = yield* makeWebhookReceiver
      const env = publishEnv(yield* freshDatabaseEnv, {
        PUBLISH_TIMEOUT_SECONDS: String(timeoutSeconds),
        PUBLISH_RECOVERY_SECONDS: String(recoverySeconds)
      })
      const initial = 5
      const { accountIds: [late], organizationId, postId, teamId, token } = yield* publishingSetup(env, receiver.url, 1, initial)
      // The first call is answered 200 only once the post-now has answered, later than the timeout; a repeat at once.
      let lateCall: ServerResponse | undefined
      receiver.answerWith((_event, response) => receiver.received.length === 1 ? (lateCall = response) : answerOk(response))
      const server = yield* startServer(env)
      const call = callsAs(server, token)

      const started = Date.now()
      const sent = yield* call("POST", `/v1/teams/${teamId}/posts/${postId}/post-now`, { socialAccountIds: [late] })
      expect(Date.now() - started).toBeGreaterThanOrEqual(timeoutSeconds * 1000 - 100)
      expect(sent).toMatchObject({
        status: 200,
        body: {
          results: [{
            socialAccountId: late,
            status: "pending",
            creditsSpent: 0,
            error: { category: "transient", retryable: true, message: expect.stringContaining(`No answer within ${timeoutSeconds}s`) }
          }]
        }
      })
      // In doubt, not failed: the credit stays held, nothing is given back, even once the late 200 has come.
      const post = (yield* call("GET", `/v1/teams/${teamId}/posts/${postId}`)).body
      expect(post).toMatchObject({ status: "publishing", targets: [{ socialAccountId: late, status: "pending" }] })
      answerOk(lateCall!)
      yield* Effect.sleep("500 millis")
      const held = yield* creditsOf(call, organizationId)
      expect(held).toMatchObject({ balance: initial, reserved: 1, sums: { grant: initial, reserve: 1 } })
      expect(held.sums.release).toBeUndefined()
      expect((yield* call("GET", `/v1/teams/${teamId}/posts/${postId}`)).body.targets[0].status).toBe("pending")

      const after = yield* readUntil(
        call("GET", `/v1/teams/${teamId}/posts/${postId}`),
        (answer) => answer.body.status !== "publishing",
        recoverySeconds + 180
      )
      expect(after.body).toMatchObject({
        status: "published",
        targets: [{ socialAccountId: late, status: "published", error: null, creditsSpent: 1 }]
      })
      const ids = deliveries(receiver.received, late)
      expect(ids).toHaveLength(2)
      expect(ids[1]).toBe(ids[0])
      const credits = yield* creditsOf(call, organizationId)
      expect(credits).toMatchObject({ balance: initial - 1, reserved: 0, sums: { grant: initial, reserve: 1, spend: 1 } })
      expect(credits.sums.release).toBeUndefined()
    }))

  it.scopedLive("bounds a post-now to 16 hanging receivers by one timeout, all of them pending", () =>
    Effect.gen(function*() {
      const timeoutSeconds = 5
      const receiver = yield* makeWebhookReceiver
      const env = publishEnv(yield* freshDatabaseEnv, { PUBLISH_TIMEOUT_SECONDS: String(timeoutSeconds), PUBLISH_RECOVERY_SECONDS: "60" })
      const { accountIds, organizationId, postId, teamId, token } = yield* publishingSetup(env, receiver.url, 16, 20)
      // How many calls had arrived when each hanging call was cut: 16 every time unless the sends went one after
      // another, or in rounds (one timeout, not two).
      const receivedWhenCut: Array<number> = []
      receiver.answerWith((_event, response) => void response.once("close", () => receivedWhenCut.push(receiver.received.length)))
      const server = yield* startServer(env)
      const call = callsAs(server, token)

      const started = Date.now()
      const sent = yield* call("POST", `/v1/teams/${teamId}/posts/${postId}/post-now`, { socialAccountIds: accountIds })
      expect(Date.now() - started).toBeGreaterThanOrEqual(timeoutSeconds * 1000 - 100)
      yield* readUntil(Effect.sync(() => receivedWhenCut.length), (cut) => cut === 16)
      expect(receivedWhenCut).toEqual(accountIds.map(() => 16))
      expect(sent.status).toBe(200)
      expect(sent.body.results).toEqual(accountIds.map((socialAccountId) => expect.objectContaining({ socialAccountId, status: "pending" })))
      expect(receiver.received).toHaveLength(16)
      expect(yield* creditsOf(call, organizationId)).toMatchObject({ balance: 20, reserved: 16 })
    }))
})

describe("a send that never gets an answer", () => {
  it.scopedLive("fails after SCHEDULE_MAX_ATTEMPTS attempts, not retryable, its credit released exactly once", () =>
    Effect.gen(function*() {
      const timeoutSeconds = 3
      const recoverySeconds = 9
      const receiver = yield* makeWebhookReceiver
      const env = publishEnv(yield* freshDatabaseEnv, {
        PUBLISH_TIMEOUT_SECONDS: String(timeoutSeconds),
        PUBLISH_RECOVERY_SECONDS: String(recoverySeconds),
        SCHEDULE_MAX_ATTEMPTS: "2"
      })
      const initial = 5
      const { accountIds: [silent], organizationId, postId, teamId, token } = yield* publishingSetup(env, receiver.url, 1, initial)
      receiver.answerWith(() => undefined)
      const server = yield* startServer(env)
      const call = callsAs(server, token)

      const sent = yield* call("POST", `/v1/teams/${teamId}/posts/${postId}/post-now`, { socialAccountIds: [silent] })
      expect(sent.body.results).toMatchObject([{ socialAccountId: silent, status: "pending" }])
      const after = yield* readUntil(
        call("GET", `/v1/teams/${teamId}/posts/${postId}`),
        (answer) => answer.body.status !== "publishing",
        recoverySeconds + timeoutSeconds + 180
      )
      expect(after.body).toMatchObject({
        status: "failed",
        targets: [{ socialAccountId: silent, status: "failed", creditsSpent: 0, error: { retryable: false } }]
      })
      const ids = deliveries(receiver.received, silent)
      expect(ids).toHaveLength(2)
      expect(ids[1]).toBe(ids[0])
      // Another round of the recovery changes nothing: no third call, no second release.
      yield* Effect.sleep(`${(recoverySeconds / 4) * 1000 + 1000} millis`)
      expect(receiver.received).toHaveLength(2)
      const credits = yield* creditsOf(call, organizationId)
      expect(credits).toMatchObject({ balance: initial, reserved: 0, sums: { grant: initial, reserve: 1, release: 1 } })
      expect(credits.sums.spend).toBeUndefined()
      expect(credits.perAccount[silent]).toEqual({ reserve: 1, release: 1 })
    }))
})
