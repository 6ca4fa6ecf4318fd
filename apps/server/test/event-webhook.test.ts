import { describe, expect, it, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, HashMap, Layer, Logger, LogLevel } from "effect"
import { readFileSync } from "node:fs"
import { Webhook } from "standardwebhooks"
import { makeWebhookReceiver, publishingTeam, type ReceivedEvent } from "./support/Publishing.js"
import { publishEnv, readUntil } from "./support/ProcessPublishing.js"
import { callsAs, createUserWithToken, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"
import { makeTestServer, raw, signUp } from "./support/TestServer.js"
import { eventually } from "./support/Waiting.js"

const webhookFields = ["createdAt", "events", "lastDeliveredAt", "lastError", "organizationId", "pendingDeliveries", "secretCreatedAt", "updatedAt", "url"]

// What the server logs, to look for secrets in.
const logged: Array<unknown> = []
const capturingLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ annotations, cause, message }) =>
    void logged.push({ message, cause: String(cause), annotations: Object.fromEntries(HashMap.toEntries(annotations)) }))
)

const settings = (entries: ReadonlyArray<readonly [string, string]>) =>
  Layer.setConfigProvider(ConfigProvider.fromMap(new Map(entries)).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv())))

/** The server with its scheduler looking five times a second, which may call this machine (its receivers). */
const EventsServer = makeTestServer(Layer.merge(capturingLogger, Logger.minimumLogLevel(LogLevel.Info))).pipe(
  Layer.provide(settings([["SCHEDULER_POLL_MS", "200"], ["OUTBOUND_ALLOW_PRIVATE", "true"]]))
)

/** The events a receiver got, verified with the secret (throws if one is forged), oldest first. */
const eventsOf = (received: ReadonlyArray<ReceivedEvent>, secret: string) =>
  received.map((event) =>
    new Webhook(secret).verify(event.body, {
      "webhook-id": String(event.headers["webhook-id"]),
      "webhook-timestamp": String(event.headers["webhook-timestamp"]),
      "webhook-signature": String(event.headers["webhook-signature"])
    }) as any
  )

/** An organization with an event webhook on a receiver of this machine; its secret as shown once. */
const withEventWebhook = Effect.gen(function*() {
  const events = yield* makeWebhookReceiver
  const team = yield* publishingTeam()
  const path = `/v1/organizations/${team.organization.id}/event-webhook`
  const set = yield* raw({ method: "PUT", path, token: team.admin.token, json: { url: events.url } })
  if (set.status !== 200) throw new Error(`event webhook: ${set.status} ${JSON.stringify(set.body)}`)
  return { ...team, events, path, secret: set.body.signingSecret as string, set }
})

layer(EventsServer, { excludeTestServices: true })("the organization's event webhook", (it) => {
  it.scoped("is set by an admin, shows its secret once, and is told of each account's end, signed", () =>
    Effect.gen(function*() {
      const { admin, connect, draft, events, organization, path, postNow, secret, set, team } = yield* withEventWebhook
      expect(Object.keys(set.body).sort()).toEqual([...webhookFields, "signingSecret"].sort())
      expect(set.body).toMatchObject({
        organizationId: organization.id,
        url: events.url,
        events: ["post.published", "post.failed", "post.deleted"],
        pendingDeliveries: 0,
        lastDeliveredAt: null,
        lastError: null
      })
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
      // Never again: not read back, not set again by a change of URL.
      const read = yield* raw({ method: "GET", path, token: admin.token })
      expect(read.status).toBe(200)
      expect(Object.keys(read.body).sort()).toEqual(webhookFields)
      expect(JSON.stringify(read.body)).not.toContain(secret)
      const kept = yield* raw({ method: "PUT", path, token: admin.token, json: { url: events.url } })
      expect(kept.body).toMatchObject({ signingSecret: null, secretCreatedAt: set.body.secretCreatedAt })
      // Kept encrypted, with the credentials key.
      const sql = yield* SqlClient.SqlClient
      const [stored] = yield* sql<{ secret: string }>`SELECT secret FROM event_webhooks WHERE organization_id = ${organization.id}`
      expect(stored.secret).toMatch(/^v1\./)
      expect(stored.secret).not.toContain(secret.slice(6))

      const good = yield* makeWebhookReceiver
      const bad = yield* makeWebhookReceiver
      bad.answerWith((_event, response) => response.writeHead(503).end())
      const ok = yield* connect({ provider: "webhook", url: good.url })
      const failing = yield* connect({ provider: "webhook", url: bad.url })
      const post = yield* draft("Told to the organization")
      expect((yield* postNow(post.id, [ok.id, failing.id])).body.outcome).toBe("partially_failed")

      yield* eventually(Effect.sync(() => events.received.length), (count) => count >= 2)
      const received = eventsOf(events.received, secret)
      expect(received).toHaveLength(2)
      const byType = new Map(received.map((event) => [event.type, event]))
      expect(byType.get("post.published")).toEqual({
        type: "post.published",
        timestamp: expect.any(String),
        data: {
          organizationId: organization.id,
          teamId: team.id,
          postId: post.id,
          socialAccountId: ok.id,
          provider: "webhook",
          status: "published",
          externalId: expect.stringMatching(/^msg_/),
          url: null,
          publishedAt: expect.any(String),
          error: null,
          creditsSpent: 0,
          deletedAt: null
        }
      })
      expect(byType.get("post.failed")).toEqual({
        type: "post.failed",
        timestamp: expect.any(String),
        data: {
          organizationId: organization.id,
          teamId: team.id,
          postId: post.id,
          socialAccountId: failing.id,
          provider: "webhook",
          status: "failed",
          externalId: null,
          url: null,
          publishedAt: null,
          error: { category: "transient", message: "The receiver answered 503 Service Unavailable", retryable: true },
          creditsSpent: 0,
          deletedAt: null
        }
      })
      // Signed as the provider webhook is: Standard Webhooks headers, an id per event.
      const ids = events.received.map((event) => String(event.headers["webhook-id"]))
      for (const id of ids) expect(id).toMatch(/^msg_[0-9a-f]{32}$/)
      expect(new Set(ids).size).toBe(2)
      expect(events.received[0].headers["content-type"]).toBe("application/json")
      expect(() => eventsOf(events.received, `whsec_${Buffer.alloc(32, 1).toString("base64")}`)).toThrow()

      const after = yield* eventually(raw({ method: "GET", path, token: admin.token }), (response) => response.body.lastDeliveredAt !== null)
      expect(after.body).toMatchObject({ pendingDeliveries: 0, lastError: null })
      expect(JSON.stringify(logged)).not.toContain(secret)
      expect(JSON.stringify(logged)).not.toContain(secret.slice(6))
    }))

  it.scoped("a failure before anything is sent is told too; an organization without a webhook is told nothing", () =>
    Effect.gen(function*() {
      const { connect, draft, events, postNow, secret } = yield* withEventWebhook
      const refusing = yield* makeWebhookReceiver
      refusing.answerWith((_event, response) => response.writeHead(401).end())
      const hook = yield* connect({ provider: "webhook", url: refusing.url })
      // Refused by the receiver (auth), then refused before sending: the account must be reconnected.
      const first = yield* draft("First")
      yield* postNow(first.id, [hook.id])
      const second = yield* draft("Second")
      yield* postNow(second.id, [hook.id])
      expect(refusing.received).toHaveLength(1)
      yield* eventually(Effect.sync(() => events.received.length), (count) => count >= 2)
      // Delivered concurrently: in no set order.
      const byPost = new Map(eventsOf(events.received, secret).map((event) => [event.data.postId, event]))
      expect(byPost.get(first.id)).toMatchObject({
        type: "post.failed",
        data: { socialAccountId: hook.id, status: "failed", error: { category: "auth", retryable: false } }
      })
      expect(byPost.get(second.id)).toMatchObject({
        type: "post.failed",
        data: { socialAccountId: hook.id, status: "failed", error: { category: "auth", retryable: false, message: expect.stringContaining("reconnecting") } }
      })

      // Another organization, with no event webhook: nothing is recorded for it.
      const other = yield* publishingTeam()
      const receiver = yield* makeWebhookReceiver
      const otherHook = yield* other.connect({ provider: "webhook", url: receiver.url })
      yield* other.postNow((yield* other.draft("Untold")).id, [otherHook.id])
      const sql = yield* SqlClient.SqlClient
      const [{ count }] = yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM event_deliveries
        WHERE organization_id = ${other.organization.id}`
      expect(count).toBe(0)
    }))

  it.scoped("a delivery that fails is tried again with the same id, and the webhook says why meanwhile", () =>
    Effect.gen(function*() {
      const { admin, connect, draft, events, path, postNow, secret } = yield* withEventWebhook
      events.answerWith((_event, response) => response.writeHead(events.received.length === 1 ? 500 : 204).end())
      const receiver = yield* makeWebhookReceiver
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      yield* postNow((yield* draft("Delivered at the second try")).id, [hook.id])

      const waiting = yield* eventually(raw({ method: "GET", path, token: admin.token }), (response) => response.body.lastError !== null)
      expect(waiting.body).toMatchObject({
        pendingDeliveries: 1,
        lastDeliveredAt: null,
        lastError: { message: "The receiver answered 500 Internal Server Error", at: expect.any(String) }
      })
      // Its next try is 10 seconds away: brought forward.
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE event_deliveries SET due_at = now() WHERE organization_id = ${waiting.body.organizationId}`
      yield* eventually(Effect.sync(() => events.received.length), (count) => count >= 2)
      const [first, second] = events.received
      expect(second.headers["webhook-id"]).toBe(first.headers["webhook-id"])
      expect(eventsOf([second], secret)[0]).toEqual(eventsOf([first], secret)[0])
      const done = yield* eventually(raw({ method: "GET", path, token: admin.token }), (response) => response.body.pendingDeliveries === 0)
      expect(done.body).toMatchObject({ lastError: null, lastDeliveredAt: expect.any(String) })
    }))

  it.scoped("rotating the secret signs the next events with the new one only; deleting drops what waits", () =>
    Effect.gen(function*() {
      const { admin, connect, draft, events, path, postNow, secret } = yield* withEventWebhook
      const rotated = yield* raw({ method: "PUT", path, token: admin.token, json: { url: events.url, rotateSecret: true } })
      expect(rotated.status).toBe(200)
      const next = rotated.body.signingSecret as string
      expect(next).toMatch(/^whsec_/)
      expect(next).not.toBe(secret)
      const receiver = yield* makeWebhookReceiver
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      yield* postNow((yield* draft("Signed anew")).id, [hook.id])
      yield* eventually(Effect.sync(() => events.received.length), (count) => count >= 1)
      expect(eventsOf(events.received, next)[0].type).toBe("post.published")
      expect(() => eventsOf(events.received, secret)).toThrow()

      // Deleted while an event waits for a receiver that does not answer: the event goes with it.
      events.answerWith((_event, response) => response.writeHead(503).end())
      yield* postNow((yield* draft("Never told")).id, [hook.id])
      yield* eventually(raw({ method: "GET", path, token: admin.token }), (response) => response.body.lastError !== null)
      const deleted = yield* raw({ method: "DELETE", path, token: admin.token })
      expect(deleted.status).toBe(200)
      expect(Object.keys(deleted.body).sort()).toEqual(webhookFields)
      expect((yield* raw({ method: "GET", path, token: admin.token })).body).toMatchObject({ _tag: "NotFound" })
      expect((yield* raw({ method: "DELETE", path, token: admin.token })).status).toBe(404)
      const sql = yield* SqlClient.SqlClient
      const [{ count }] = yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM event_deliveries
        WHERE organization_id = ${deleted.body.organizationId}`
      expect(count).toBe(0)
    }))

  it.scoped("admins, owners and API keys manage it; members get 403, other organizations 404", () =>
    Effect.gen(function*() {
      const { admin, events, organization, path } = yield* withEventWebhook
      const member = yield* signUp("Mo Member")
      yield* raw({
        method: "POST",
        path: `/v1/organizations/${organization.id}/members`,
        token: admin.token,
        json: { email: member.user.email, role: "member" }
      })
      const calls = [
        { method: "GET" as const },
        { method: "PUT" as const, json: { url: events.url } },
        { method: "DELETE" as const }
      ]
      for (const call of calls) {
        const refused = yield* raw({ ...call, path, token: member.token })
        expect(refused.status, call.method).toBe(403)
        expect(refused.body._tag).toBe("Forbidden")
      }
      const outsider = yield* signUp("Olga Outsider")
      for (const call of calls) {
        const refused = yield* raw({ ...call, path, token: outsider.token })
        expect(refused.status, call.method).toBe(404)
        expect(refused.body._tag).toBe("NotFound")
      }
      const key = yield* raw({ method: "POST", path: `/v1/organizations/${organization.id}/api-keys`, token: admin.token, json: { name: "CI" } })
      expect((yield* raw({ method: "GET", path, token: key.body.key })).status).toBe(200)
      expect((yield* raw({ method: "PUT", path, token: key.body.key, json: { url: `${events.url}/moved` } })).body)
        .toMatchObject({ url: `${events.url}/moved`, signingSecret: null })
      expect((yield* raw({ method: "GET", path })).status).toBe(401)
    }))

  it.effect("refuses what is not a URL it may call", () =>
    Effect.gen(function*() {
      const { admin, path } = yield* publishingTeam().pipe(
        Effect.map((team) => ({ ...team, path: `/v1/organizations/${team.organization.id}/event-webhook` }))
      )
      for (
        const json of [
          {},
          { url: "ftp://example.com/events" },
          { url: "https://user:password@example.com/events" },
          { url: "example.com/events" },
          { url: `https://example.com/${"x".repeat(2048)}` },
          { url: "https://example.com/events", rotateSecret: "yes" },
          { url: "https://example.com/events", events: ["post.failed"] }
        ]
      ) {
        const refused = yield* raw({ method: "PUT", path, token: admin.token, json })
        expect(refused.status, JSON.stringify(json).slice(0, 60)).toBe(400)
        expect(refused.body._tag).toBe("HttpApiDecodeError")
      }
      // A host that does not resolve cannot be called.
      const unresolved = yield* raw({ method: "PUT", path, token: admin.token, json: { url: "https://postline-test.invalid/events" } })
      expect(unresolved).toMatchObject({ status: 400, body: { _tag: "BadRequest", message: expect.stringContaining("cannot be called") } })
      expect((yield* raw({ method: "GET", path, token: admin.token })).status).toBe(404)
    }))
})

/** The production guard: private addresses and http refused. */
const GuardedServer = makeTestServer(Logger.minimumLogLevel(LogLevel.Warning)).pipe(
  Layer.provide(settings([["OUTBOUND_ALLOW_PRIVATE", "false"]]))
)

layer(GuardedServer, { excludeTestServices: true })("the event webhook without OUTBOUND_ALLOW_PRIVATE", (it) => {
  it.effect("refuses private addresses and http", () =>
    Effect.gen(function*() {
      const { admin, organization } = yield* publishingTeam()
      const path = `/v1/organizations/${organization.id}/event-webhook`
      for (const url of ["https://127.0.0.1/events", "https://10.1.2.3/events", "https://[::1]/events", "http://example.com/events"]) {
        const refused = yield* raw({ method: "PUT", path, token: admin.token, json: { url } })
        expect(refused.status, url).toBe(400)
        expect(refused.body, url).toMatchObject({ _tag: "BadRequest", message: expect.stringContaining("cannot be called") })
      }
      expect((yield* raw({ method: "GET", path, token: admin.token })).status).toBe(404)
    }))
})

describe("the event webhook, from the built server", () => {
  it.scopedLive("delivers a signed event once a post is published", () =>
    Effect.gen(function*() {
      const events = yield* makeWebhookReceiver
      const receiver = yield* makeWebhookReceiver
      const env = publishEnv(yield* freshDatabaseEnv, {
        CREDIT_COSTS: "{}",
        SCHEDULER_POLL_MS: "200",
        PUBLIC_URL: "https://postline.example",
        // For the start line, which names the version.
        LOG_LEVEL: "INFO"
      })
      const { token } = yield* createUserWithToken(env)
      const server = yield* startServer(env)
      const call = callsAs(server, token)
      const organization = (yield* call("POST", "/v1/organizations", { name: "Told" })).body
      const team = (yield* call("POST", "/v1/teams", { organizationId: organization.id, name: "Social" })).body
      const set = yield* call("PUT", `/v1/organizations/${organization.id}/event-webhook`, { url: events.url })
      expect(set.status).toBe(200)
      const hook = (yield* call("POST", `/v1/teams/${team.id}/social-accounts`, { provider: "webhook", url: receiver.url })).body
      const post = (yield* call("POST", `/v1/teams/${team.id}/posts`, { content: "Told by the process" })).body
      expect((yield* call("POST", `/v1/teams/${team.id}/posts/${post.id}/post-now`, { socialAccountIds: [hook.id] })).status).toBe(200)
      yield* readUntil(Effect.sync(() => events.received.length), (count) => count >= 1)
      expect(eventsOf(events.received, set.body.signingSecret)).toMatchObject([
        { type: "post.published", data: { postId: post.id, socialAccountId: hook.id, teamId: team.id, status: "published" } }
      ])
      expect(server.lines.join("\n")).not.toContain(set.body.signingSecret.slice(6))
      // Both the event and the publish name the server as its start line does (the version the build wrote in).
      const version = server.lines.join("\n").match(/Postline (\S+) is listening/)?.[1]
      expect(version).toBe(JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version)
      expect(events.received[0]!.headers["user-agent"]).toBe(`Postline/${version} (+https://postline.example)`)
      expect(receiver.received[0]!.headers["user-agent"]).toBe(`Postline/${version} (+https://postline.example)`)
    }))
})
