import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { publishEnv, publishingSetup, readUntil } from "./support/ProcessPublishing.js"
import { makeWebhookReceiver } from "./support/Publishing.js"
import { rawConnection } from "./support/RawHttp.js"
import { callsAs, createUserWithToken, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"

const request = (method: string, path: string, token: string, body?: string) =>
  `${method} ${path} HTTP/1.1\r\nHost: postline\r\nAuthorization: Bearer ${token}\r\n` +
  (body === undefined ? "\r\n" : `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`)

describe("stopping on SIGTERM", () => {
  it.scopedLive("finishes requests in flight, and answers 503 with Connection: close on open keep-alive connections", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabaseEnv
      const { token } = yield* createUserWithToken(database)
      const server = yield* startServer({ ...database, SHUTDOWN_GRACE_SECONDS: "20" })

      const idle = yield* rawConnection(server.base)
      idle.write(request("GET", "/v1/organizations", token))
      expect(yield* Effect.promise(idle.response)).toMatchObject({ status: 200, headers: { connection: "keep-alive" } })

      // A request whose body is still coming when the signal arrives.
      const inFlight = yield* rawConnection(server.base)
      const body = JSON.stringify({ name: "Sent during shutdown" })
      inFlight.write(request("POST", "/v1/organizations", token, body) + body.slice(0, 5))
      yield* Effect.sleep("300 millis")

      server.child.kill("SIGTERM")
      yield* Effect.sleep("500 millis")
      idle.write(request("GET", "/v1/organizations", token))
      expect(yield* Effect.promise(idle.response)).toEqual({
        status: 503,
        headers: expect.objectContaining({ connection: "close", "content-type": "application/json" }),
        body: { _tag: "ServiceUnavailable", message: "The server is shutting down" }
      })
      expect(yield* Effect.promise(() => idle.closed)).toEqual({ reset: false })

      inFlight.write(body.slice(5))
      const created = yield* Effect.promise(inFlight.response)
      expect(created).toMatchObject({
        status: 201,
        headers: { connection: "close" },
        body: { name: "Sent during shutdown" }
      })
      expect(yield* Effect.promise(() => inFlight.closed)).toEqual({ reset: false })
      expect(yield* Effect.promise(() => server.exited)).toBe(0)
    }))

  it.scopedLive("lets a post-now's send under way finish: its caller gets the answer, the network the post once", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      // The network holds its answer until the server is stopping.
      let answer = () => {}
      receiver.answerWith((_event, response) => void (answer = () => response.writeHead(204).end()))
      const env = publishEnv(yield* freshDatabaseEnv, { SHUTDOWN_GRACE_SECONDS: "120" })
      const { accountIds: [account], postId, teamId, token } = yield* publishingSetup(env, receiver.url, 1, 5)
      const server = yield* startServer(env)
      const call = callsAs(server, token)
      const postNow = yield* Effect.fork(call("POST", `/v1/teams/${teamId}/posts/${postId}/post-now`, { socialAccountIds: [account] }))
      yield* readUntil(Effect.sync(() => receiver.received.length), (count) => count === 1)

      server.child.kill("SIGTERM")
      const stopping = yield* readUntil(call("GET", "/v1/organizations"), (response) => response.status === 503)
      expect(stopping.body).toEqual({ _tag: "ServiceUnavailable", message: "The server is shutting down" })
      answer()
      expect(yield* Fiber.join(postNow)).toMatchObject({
        status: 200,
        body: { outcome: "none_failed", results: [{ socialAccountId: account, status: "published" }] }
      })
      expect(yield* Effect.promise(() => server.exited)).toBe(0)
      expect(receiver.received).toHaveLength(1)
    }))
})
