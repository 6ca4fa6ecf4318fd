import { expect, layer } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { BlueskyNetwork } from "./support/BlueskyNetwork.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { LocalProviders } from "./support/Providers.js"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { makeTestServer, raw, signUp } from "./support/TestServer.js"
import { freshTestStorage } from "./support/TestStorage.js"
import { eventually } from "./support/Waiting.js"

// Schedules as near as a second ahead, and a scheduler that looks often: the race below meets the send.
const Server = Layer.merge(
  makeTestServer(Logger.minimumLogLevel(LogLevel.Warning), LocalProviders, freshTestStorage("filesystem")),
  BlueskyNetwork.layer()
// An event webhook on this machine.
).pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(
  new Map([["SCHEDULE_MIN_LEAD_SECONDS", "1"], ["SCHEDULER_POLL_MS", "100"], ["OUTBOUND_ALLOW_PRIVATE", "true"]])
).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv())))))

layer(Server, { excludeTestServices: true })("unpublish", (it) => {
  it.scoped("takes a thread and its comment down from Bluesky, Mastodon and a webhook; once; credits stay spent", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const mastodon = yield* makeMastodonFake()
      const receiver = yield* makeWebhookReceiver
      const events = yield* makeWebhookReceiver
      const { admin, call, connect, credit, organization, postNow } = yield* publishingTeam(20)
      const eventWebhook = yield* raw({
        method: "PUT",
        path: `/v1/organizations/${organization.id}/event-webhook`,
        token: admin.token,
        json: { url: events.url }
      })
      expect(eventWebhook.status).toBe(200)
      const eventSecret: string = eventWebhook.body.signingSecret
      const pds = yield* Effect.promise(() => network.createAccount({}))
      const sky = yield* connect({ provider: "bluesky", handle: pds.handle, appPassword: pds.appPassword, serviceUrl: network.serviceUrl })
      const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
      const hook = yield* connect({ provider: "webhook", url: `${receiver.url}/hooks` })
      const post = (yield* call("POST", "/posts", {
        content: "A mistake",
        thread: [{ content: "and more of it" }],
        firstComment: { content: "and a comment" }
      })).body

      const early = yield* call("POST", `/posts/${post.id}/unpublish`, {})
      expect(early).toMatchObject({ status: 409, body: { _tag: "Conflict", reason: "post_not_published" } })
      const published = yield* postNow(post.id, [sky.id, toot.id, hook.id])
      expect(published.body.outcome).toBe("none_failed")
      const skyUris = [...published.body.results[0].parts.map((part: any) => part.externalId), published.body.results[0].firstComment.externalId]
      const spent = yield* credit
      const targetOrder = (yield* call("GET", `/posts/${post.id}`)).body.targets.map((target: any) => target.socialAccountId)

      const unpublish = (body: unknown, key: string) => call("POST", `/posts/${post.id}/unpublish`, body, { "idempotency-key": key })
      const answer = yield* unpublish({}, "take-it-down")
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      expect(answer.body).toEqual({
        postId: post.id,
        outcome: "none_failed",
        // Every account it is published to, in the order of the post's targets.
        results: targetOrder.map((socialAccountId: string) => ({ socialAccountId, status: "deleted", error: null }))
      })

      // At each network: every record gone; every status deleted, replies first; one signed post.deleted.
      for (const uri of skyUris) {
        const read = yield* Effect.promise(() => network.getRecord(uri).then(() => "found", (error: Error) => error.message))
        expect(read).toMatch(/Could not locate record/)
      }
      expect(mastodon.deleted).toEqual([mastodon.statuses[2].id, mastodon.statuses[1].id, mastodon.statuses[0].id])
      expect(receiver.received).toHaveLength(2)
      expect(receiver.verify(receiver.received[1], hook.signingSecret!)).toEqual({
        type: "post.deleted",
        timestamp: expect.any(String),
        data: {
          postId: post.id,
          socialAccountId: hook.id,
          idempotencyKey: `${post.id}:${hook.id}:deleted`,
          externalIds: [published.body.results[2].externalId]
        }
      })

      const read = (yield* call("GET", `/posts/${post.id}`)).body
      expect(read.status).toBe("deleted")
      for (const target of read.targets) {
        expect(target).toMatchObject({ status: "deleted", deletedAt: expect.stringMatching(/Z$/), creditsSpent: target.creditsSpent })
      }
      expect(yield* credit).toEqual(spent)
      // The organization's event webhook is told of each account's end, signed.
      const setSecret = eventSecret
      const told = yield* eventually(
        Effect.sync(() => events.received.map((event) => events.verify(event, setSecret) as any)),
        (received) => received.filter((event) => event.type === "post.deleted").length === 3
      )
      expect(told.filter((event) => event.type === "post.deleted").map((event) => [event.data.socialAccountId, event.data.status]).sort())
        .toEqual([sky.id, toot.id, hook.id].map((id) => [id, "deleted"]).sort())
      for (const event of told.filter((event) => event.type === "post.deleted")) expect(event.data.deletedAt).toMatch(/Z$/)
      const attempts = (yield* call("GET", `/posts/${post.id}/attempts?socialAccountId=${toot.id}`)).body.data
      expect(attempts.map((attempt: any) => [attempt.kind, attempt.outcome])).toEqual([["delete", "deleted"], ["publish", "published"]])

      // The key replays the answer; a new request finds nothing to take down; the post is not published there again.
      const replay = yield* unpublish({}, "take-it-down")
      expect(replay.status).toBe(200)
      expect(replay.body).toEqual(answer.body)
      expect(mastodon.deleted).toHaveLength(3)
      const again = yield* unpublish({ socialAccountIds: [toot.id] }, "again")
      expect(again).toMatchObject({ status: 409, body: { _tag: "Conflict", reason: "post_not_published", message: expect.stringContaining(toot.id) } })
      const republish = yield* postNow(post.id, [toot.id])
      expect(republish).toMatchObject({ status: 409, body: { _tag: "Conflict", reason: "post_deleted" } })
      expect(mastodon.statuses).toHaveLength(3)

      // Another organization's member gets 404 and changes nothing.
      const stranger = yield* signUp("Stranger")
      const foreign = yield* raw({ method: "POST", path: `/v1/teams/${read.teamId}/posts/${post.id}/unpublish`, token: stranger.token, json: {} })
      expect(foreign.status).toBe(404)
    }))

  it.scoped("unpublish raced against the scheduled send of the same post: never a part deleted before it went out, each sent and deleted once", () =>
    Effect.gen(function*() {
      const mastodon = yield* makeMastodonFake()
      const { call, connect, scheduleSoon } = yield* publishingTeam(20)
      const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
      const post = (yield* call("POST", "/posts", { content: "Soon gone", thread: [{ content: "and its reply" }] })).body
      const { answer: scheduled } = yield* scheduleSoon(post.id, [toot.id], 2)
      expect(scheduled.status).toBe(200)

      // Asked again and again while the scheduler sends: refused until the post is published, then taken down.
      const refusals = new Set<string>()
      let taken: { status: number; body: any } | undefined
      for (let tries = 0; tries < 600 && taken === undefined; tries++) {
        const asked = yield* call("POST", `/posts/${post.id}/unpublish`, {})
        if (asked.status === 200) taken = asked
        else {
          expect(asked.status).toBe(409)
          refusals.add(asked.body.reason)
          yield* Effect.sleep("20 millis")
        }
      }
      expect(taken?.body.results).toEqual([{ socialAccountId: toot.id, status: "deleted", error: null }])
      expect([...refusals].every((reason) => ["post_scheduled", "post_publishing", "post_not_published"].includes(reason))).toBe(true)
      expect(mastodon.statuses.map((status) => status.text)).toEqual(["Soon gone", "and its reply"])
      expect(mastodon.deleted).toEqual([mastodon.statuses[1].id, mastodon.statuses[0].id])
      expect((yield* call("GET", `/posts/${post.id}`)).body).toMatchObject({ status: "deleted", targets: [{ status: "deleted" }] })
    }))

  it.scoped("five unpublish requests at once: one takes the post down, the others are refused, the network asked once", () =>
    Effect.gen(function*() {
      const mastodon = yield* makeMastodonFake()
      const { call, connect, postNow } = yield* publishingTeam(20)
      const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
      const post = (yield* call("POST", "/posts", { content: "Published once" })).body
      expect((yield* postNow(post.id, [toot.id])).body.outcome).toBe("none_failed")
      const answers = yield* Effect.all(
        Array.from({ length: 5 }, () => call("POST", `/posts/${post.id}/unpublish`, { socialAccountIds: [toot.id] })),
        { concurrency: "unbounded" }
      )
      expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1)
      for (const answer of answers.filter((answer) => answer.status !== 200)) {
        expect(answer).toMatchObject({ status: 409, body: { _tag: "Conflict" } })
        expect(["post_deleting", "post_not_published"]).toContain(answer.body.reason)
      }
      expect(mastodon.deleted).toEqual([mastodon.statuses[0].id])
      expect(mastodon.requests.filter((request) => request.method === "DELETE")).toHaveLength(1)
    }))
})

// Sends cut short after a second, and taken over seven seconds after they began.
const ImpatientServer = makeTestServer(Logger.minimumLogLevel(LogLevel.Error), LocalProviders).pipe(
  Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(
    new Map([["PUBLISH_TIMEOUT_SECONDS", "1"], ["PUBLISH_RECOVERY_SECONDS", "7"]])
  ).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))))
)

layer(ImpatientServer, { excludeTestServices: true })("unpublish without an answer", (it) => {
  it.scoped("a delete the network does not answer in time stays deleting, and the recovery asks again until it is done", () =>
    Effect.gen(function*() {
      const mastodon = yield* makeMastodonFake()
      const { call, connect, postNow } = yield* publishingTeam(20)
      const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
      const post = (yield* call("POST", "/posts", { content: "Slow to go" })).body
      expect((yield* postNow(post.id, [toot.id])).body.outcome).toBe("none_failed")

      const release = mastodon.holdNext()
      const key = { "idempotency-key": "slow-delete" }
      const answer = yield* call("POST", `/posts/${post.id}/unpublish`, {}, key)
      expect(answer.body.results).toEqual([{
        socialAccountId: toot.id,
        status: "deleting",
        error: { category: "transient", message: expect.stringContaining("No answer"), retryable: true }
      }])
      expect((yield* call("GET", `/posts/${post.id}`)).body).toMatchObject({ status: "published", targets: [{ status: "deleting" }] })
      const busy = yield* call("POST", `/posts/${post.id}/unpublish`, { socialAccountIds: [toot.id] })
      expect(busy).toMatchObject({ status: 409, body: { reason: "post_deleting" } })
      // Its key is held until the delete ends: then it answers the end.
      const early = yield* call("POST", `/posts/${post.id}/unpublish`, {}, key)
      expect(early).toMatchObject({ status: 409, body: { reason: "idempotency_key_in_progress" } })
      // The held delete goes through at the instance after all; the recovery's repeat finds it gone (404).
      release()
      const done = yield* eventually(
        call("GET", `/posts/${post.id}`),
        (read) => read.body.status === "deleted"
      )
      expect(done.body.targets[0]).toMatchObject({ status: "deleted", deletedAt: expect.stringMatching(/Z$/) })
      expect(mastodon.deleted).toEqual([mastodon.statuses[0].id])
      expect(mastodon.requests.filter((request) => request.method === "DELETE")).toHaveLength(2)
      const replayed = yield* call("POST", `/posts/${post.id}/unpublish`, {}, key)
      expect(replayed).toMatchObject({
        status: 200,
        body: { postId: post.id, outcome: "none_failed", results: [{ socialAccountId: toot.id, status: "deleted", error: null }] }
      })
      const attempts = (yield* call("GET", `/posts/${post.id}/attempts`)).body.data
      expect(attempts.map((attempt: any) => [attempt.kind, attempt.outcome])).toEqual([
        ["delete", "deleted"],
        ["delete", "in_doubt"],
        ["publish", "published"]
      ])
    }))
})
