import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { publishEnv, publishingSetup, readUntil } from "./support/ProcessPublishing.js"
import { makeWebhookReceiver } from "./support/Publishing.js"
import { callsAs, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"

const timeoutSeconds = 3
const recoverySeconds = 9

/** A server whose one webhook account never answers, with a post to it; gives up after two attempts. */
const silentAccount = Effect.gen(function*() {
  const receiver = yield* makeWebhookReceiver
  receiver.answerWith(() => undefined)
  const env = publishEnv(yield* freshDatabaseEnv, {
    PUBLISH_TIMEOUT_SECONDS: String(timeoutSeconds),
    PUBLISH_RECOVERY_SECONDS: String(recoverySeconds),
    SCHEDULE_MAX_ATTEMPTS: "2"
  })
  const { accountIds: [silent], postId, teamId, token } = yield* publishingSetup(env, receiver.url, 1, 5)
  const call = callsAs(yield* startServer(env), token)
  const postNowPath = `/v1/teams/${teamId}/posts/${postId}/post-now`
  const final = readUntil(
    call("GET", `/v1/teams/${teamId}/posts/${postId}`),
    (answer) => answer.body.status !== "publishing",
    recoverySeconds + timeoutSeconds + 180
  )
  return { call, final, postNowPath, silent }
})

describe("a post-now answered while a send is in doubt", () => {
  it.scopedLive("its Idempotency-Key answers 409 while the target is pending, then the final answer", () =>
    Effect.gen(function*() {
      const { call, final, postNowPath, silent } = yield* silentAccount
      const key = "in-doubt"
      const sent = yield* call("POST", postNowPath, { socialAccountIds: [silent] }, { "idempotency-key": key })
      expect(sent.body.results).toMatchObject([{ socialAccountId: silent, status: "pending" }])
      expect(yield* call("POST", postNowPath, { socialAccountIds: [silent] }, { "idempotency-key": key })).toMatchObject({ status: 409 })
      const after = yield* final
      expect(yield* call("POST", postNowPath, { socialAccountIds: [silent] }, { "idempotency-key": key })).toMatchObject({
        status: 200,
        replayed: "true",
        body: { outcome: "all_failed", results: [{ socialAccountId: silent, status: "failed", error: after.body.targets[0].error }] }
      })
    }))
})

describe("a target whose last attempt got no answer in time", () => {
  it.scopedLive("fails as unknown: no answer after SCHEDULE_MAX_ATTEMPTS attempts, not retryable", () =>
    Effect.gen(function*() {
      const { call, final, postNowPath, silent } = yield* silentAccount
      yield* call("POST", postNowPath, { socialAccountIds: [silent] })
      expect((yield* final).body.targets).toMatchObject([{
        status: "failed",
        error: { category: "unknown", retryable: false, message: expect.stringContaining("No answer after 2 attempts") }
      }])
    }))
})
