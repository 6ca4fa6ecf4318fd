import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Exit, Layer, Logger, LogLevel } from "effect"
import { ProviderBudgets } from "../src/Providers/Budgets.js"
import { BlueskyNetwork } from "./support/BlueskyNetwork.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { makeTestServer } from "./support/TestServer.js"
import { eventually } from "./support/Waiting.js"

// Long enough that a busy machine sends a burst's posts within one window.
const windowSeconds = 15
const jitterMs = 500

/** Budgets of two posts per account in a window on Bluesky (a post costs 3 of 6 points), one on Mastodon. */
const settings = new Map([
  ["SCHEDULE_MIN_LEAD_SECONDS", "1"],
  ["SCHEDULER_POLL_MS", "100"],
  ["PROVIDER_BUDGET_JITTER_MS", String(jitterMs)],
  [
    "PROVIDER_BUDGETS",
    JSON.stringify({
      bluesky: [{ limit: 6, cost: 3, seconds: windowSeconds }],
      mastodon: [{ limit: 1, cost: 1, seconds: windowSeconds }]
    })
  ]
])

const BudgetServer = makeTestServer(Logger.minimumLogLevel(LogLevel.Warning)).pipe(
  Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(settings).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  ))
)

/** When each attempt at the account began, oldest first. */
const attemptStarts = (socialAccountId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ startedAt: Date }>`SELECT started_at AS "startedAt" FROM publish_attempts
        WHERE social_account_id = ${socialAccountId} ORDER BY started_at`,
      (rows) => rows.map((row) => row.startedAt.getTime())
    ))

layer(Layer.merge(BudgetServer, BlueskyNetwork.layer()), { excludeTestServices: true })("provider budgets", (it) => {
  it.scoped("a Bluesky account over its budget waits, scheduled with a waitingUntil, and is published once the window allows", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const receiver = yield* makeWebhookReceiver
      const { call, connect, credit, draft, scheduleTogether } = yield* publishingTeam(10)
      const pds = yield* Effect.promise(() => network.createAccount())
      const sky = yield* connect({ provider: "bluesky", handle: pds.handle, appPassword: pds.appPassword, serviceUrl: network.serviceUrl })
      const otherPds = yield* Effect.promise(() => network.createAccount())
      const otherSky = yield* connect({
        provider: "bluesky",
        handle: otherPds.handle,
        appPassword: otherPds.appPassword,
        serviceUrl: network.serviceUrl
      })
      const hook = yield* connect({ provider: "webhook", url: receiver.url })

      const posts = yield* Effect.forEach([1, 2, 3], (i) => draft(`Burst ${i}`))
      // Another account, and an account with no budget, are not held back by the first one's.
      const other = yield* draft("Elsewhere")
      const { answers, scheduledAt: at } = yield* scheduleTogether([
        ...posts.map((post) => ({ postId: post.id, socialAccountIds: [sky.id] })),
        { postId: other.id, socialAccountIds: [otherSky.id, hook.id] }
      ], 3)
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200])

      const statusOf = (id: string) => Effect.map(call("GET", `/posts/${id}`), (response) => response.body)
      const allOf = Effect.forEach(posts, (post) => statusOf(post.id))
      const twoSent = yield* eventually(allOf, (found) => found.filter((post) => post.status === "published").length === 2)
      const held = twoSent.filter((post) => post.status !== "published")
      expect(held).toHaveLength(1)
      expect(held[0]).toMatchObject({ status: "scheduled", scheduledAt: new Date(at).toISOString() })
      expect(held[0].targets).toEqual([expect.objectContaining({ socialAccountId: sky.id, status: "pending", error: null })])
      const [firstStart] = yield* attemptStarts(sky.id)
      const waitingUntil = Date.parse(held[0].waitingUntil)
      // When the first send leaves the window, give or take the jitter.
      expect(waitingUntil).toBeGreaterThanOrEqual(firstStart + windowSeconds * 1000)
      expect(waitingUntil).toBeLessThanOrEqual(firstStart + windowSeconds * 1000 + jitterMs)
      for (const post of twoSent.filter((post) => post.status === "published")) expect(post.waitingUntil).toBeNull()
      expect((yield* eventually(statusOf(other.id), (post) => post.status === "published")).status).toBe("published")

      const done = yield* eventually(statusOf(held[0].id), (post) => post.status === "published")
      expect(done).toMatchObject({ status: "published", waitingUntil: null })
      const starts = yield* attemptStarts(sky.id)
      expect(starts).toHaveLength(3)
      expect(starts[2]).toBeGreaterThanOrEqual(waitingUntil)
      const texts = yield* Effect.forEach(yield* allOf, (post) =>
        Effect.promise(() => network.getRecord(post.targets[0].externalId)).pipe(Effect.map((record) => record.text)))
      expect(texts).toEqual(["Burst 1", "Burst 2", "Burst 3"])
      expect(yield* credit).toEqual({ balance: 6, reserved: 0, available: 6 })
    }))

  it.scoped("a Mastodon account's second post in the window waits for the first to age out, and is sent once", () =>
    Effect.gen(function*() {
      const mastodon = yield* makeMastodonFake()
      const { call, connect, draft, scheduleTogether } = yield* publishingTeam(10)
      const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
      const [first, second] = yield* Effect.forEach([1, 2], (i) => draft(`Toot ${i}`))
      const { answers } = yield* scheduleTogether([first, second].map((post) => ({ postId: post.id, socialAccountIds: [toot.id] })), 2)
      expect(answers.map((answer) => answer.status)).toEqual([200, 200])
      const statusOf = (id: string) => Effect.map(call("GET", `/posts/${id}`), (response) => response.body)
      yield* eventually(Effect.sync(() => mastodon.statuses.length), (count) => count === 1)
      // The first is "published" once the server has recorded Mastodon's answer, a moment after the fake has it.
      const waiting = yield* eventually(
        Effect.forEach([first, second], (post) => statusOf(post.id)),
        (posts) => posts.some((post) => post.status === "published")
      )
      expect(waiting.map((post) => post.status).sort()).toEqual(["published", "scheduled"])
      expect(waiting.find((post) => post.status === "scheduled").waitingUntil).toEqual(expect.any(String))
      yield* eventually(Effect.sync(() => mastodon.statuses.length), (count) => count === 2)
      const [firstStart, secondStart] = yield* attemptStarts(toot.id)
      expect(secondStart - firstStart).toBeGreaterThanOrEqual(windowSeconds * 1000)
      expect(mastodon.statuses.map((status) => status.text).sort()).toEqual(["Toot 1", "Toot 2"])
    }))
})

describe("PROVIDER_BUDGETS", () => {
  const budgetsWith = (value: string) =>
    Layer.build(ProviderBudgets.Default).pipe(
      Effect.scoped,
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["PROVIDER_BUDGETS", value]]))),
      Effect.exit
    )

  layer(Layer.empty)((it) => {
    it.effect("refuses what is not a list of windows per provider, naming the setting", () =>
      Effect.gen(function*() {
        for (const value of ["[]", "{\"bluesky\":[{\"limit\":0,\"cost\":1,\"seconds\":5}]}", "{\"myspace\":[]}", "nope"]) {
          const exit = yield* budgetsWith(value)
          expect(Exit.isFailure(exit)).toBe(true)
          expect(String(exit)).toContain("PROVIDER_BUDGETS")
        }
        expect(Exit.isSuccess(yield* budgetsWith("{\"webhook\":[{\"limit\":10,\"cost\":1,\"seconds\":60}]}"))).toBe(true)
      }))
  })
})
