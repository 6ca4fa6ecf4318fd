import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import type { ServerResponse } from "node:http"
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { makeLocalReceiver } from "./support/LocalServer.js"
import { publishingTeam } from "./support/Publishing.js"
import { makeTestServer } from "./support/TestServer.js"

setFlagsFromString("--expose-gc")
/**
 * The live data, after full collections: what is held, not what awaits collection, nor the code and bytecode (code
 * and trusted spaces) that V8 goes on compiling and optimizing while the server runs. The callbacks of a
 * FinalizationRegistry run in a task after the collection that found their objects gone (undici's lets go of each
 * request's abort listener there: a megabyte after a burst), so it collects again after them until two collections
 * in a row let go of nothing more.
 */
const gc = runInNewContext("gc") as () => void
const dataSpaces = new Set(["new_space", "old_space", "new_large_object_space", "large_object_space"])
const collected = () => {
  gc()
  return getHeapSpaceStatistics().filter((space) => dataSpaces.has(space.space_name))
    .reduce((sum, space) => sum + space.space_used_size, 0)
}
const liveHeap = Effect.gen(function*() {
  let size = collected()
  for (let steady = 0, rounds = 0; steady < 2 && rounds < 20; rounds++) {
    yield* Effect.sleep("10 millis")
    const next = collected()
    steady = next > size - 4096 ? steady + 1 : 0
    size = Math.min(size, next)
  }
  return size
})

const BurstServer = makeTestServer(Logger.minimumLogLevel(LogLevel.Warning)).pipe(
  Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(new Map([["SCHEDULER_POLL_MS", "50"]])).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  ))
)

/** `count` posts to the account, all due now: as the schedules of one posting slot find them when it comes. */
const dueNow = (teamId: string, socialAccountId: string, count: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`WITH made AS (
        INSERT INTO posts (team_id, content, status, scheduled_at, schedule_version, social_account_ids)
        SELECT ${teamId}, 'Due ' || g, 'scheduled', now(), 1, ARRAY[${socialAccountId}::uuid]
        FROM generate_series(1, ${count}) g RETURNING id, scheduled_at)
      INSERT INTO post_targets (post_id, social_account_id, status, due_at)
      SELECT id, ${socialAccountId}, 'pending', scheduled_at FROM made`)

/** How many sends the server under test has under way at most: `SCHEDULER_CONCURRENCY`'s default. */
const concurrency = 16

layer(BurstServer, { excludeTestServices: true })("a burst of due posts", (it) => {
  it.scoped("is sent in bounded memory: the live heap holds no more for 2,000 due posts than for 200", () =>
    Effect.gen(function*() {
      // The receiver holds each delivery's answer while `holding`, so that a snapshot finds the server with all its
      // sends under way, the most it has, and the rest due: the same in-flight work however many are due.
      let holding = false
      let deliveries = 0
      const held: Array<ServerResponse> = []
      const answer = (response: ServerResponse) => {
        deliveries++
        response.writeHead(204).end()
      }
      const url = yield* makeLocalReceiver((request, response) => {
        request.resume()
        request.on("end", () => (holding ? held.push(response) : answer(response)))
      })
      const { call, connect, team } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url })
      const sql = yield* SqlClient.SqlClient
      const published = sql<{ published: number }>`SELECT count(*) FILTER (WHERE result = 'published')::int AS published
        FROM publish_attempts`
      const until = (done: () => Effect.Effect<boolean, unknown>) =>
        Effect.gen(function*() {
          const deadline = Date.now() + 120_000
          while (!(yield* done())) {
            if (Date.now() > deadline) return yield* Effect.die(new Error("the burst did not come to its end"))
            yield* Effect.sleep("5 millis")
          }
        })

      /**
       * What the live data grew above where it was before `count` posts fell due: while the server has all its
       * sends under way and the rest wait (`inFlight`), and once all are published (`after`).
       */
      const burst = (count: number) =>
        Effect.gen(function*() {
          const start = deliveries
          const publishedBefore = (yield* published)[0].published
          const before = yield* liveHeap
          holding = true
          yield* dueNow(team.id, hook.id, count)
          yield* until(() => Effect.succeed(held.length >= concurrency))
          yield* Effect.sleep("50 millis") // The claim's loop settles into waiting for a free slot.
          const inFlight = (yield* liveHeap) - before
          expect(held.length).toBe(concurrency)
          holding = false
          held.splice(0).forEach(answer)
          yield* until(() =>
            Effect.map(published, ([row]) => deliveries === start + count && row.published === publishedBefore + count)
          )
          return { inFlight, after: (yield* liveHeap) - before }
        })

      // Warms what is set up once: connections and caches, and the capacity of V8's own tables, which grow in steps
      // of a few hundred KB the first time a burst as large comes.
      yield* burst(200)
      yield* burst(2_000)
      const small = [yield* burst(200), yield* burst(200), yield* burst(200)]
      const large = [yield* burst(2_000), yield* burst(2_000)]
      // Memory that grew with the number due (the due rows read at once, a sleeping execution per post) would be
      // there while all sends are under way: megabytes for 1,800 more posts, where a snapshot's noise is tens of KB
      // and a module loaded once about 100 KB. Memory that grew with the number sent (a listener or a timer kept per
      // send, about a kilobyte each) would be there after, in every large burst; the background's own work (an
      // analytics pass, a recovery sweep) caught under way by a snapshot on a busy machine is in one at most.
      const most = (key: "inFlight" | "after") => Math.max(0, ...small.map((figures) => figures[key]))
      const least = (key: "inFlight" | "after") => Math.min(...large.map((figures) => figures[key]))
      expect(least("inFlight")).toBeLessThanOrEqual(most("inFlight") * 1.1 + 256 * 1024)
      expect(least("after")).toBeLessThanOrEqual(most("after") * 1.1 + 256 * 1024)

      // Every post was published once, as recorded once its delivery's answer is in.
      const [{ attempts, published: total }] = yield* sql<{ attempts: number; published: number }>`SELECT
          count(*)::int AS attempts, count(*) FILTER (WHERE result = 'published')::int AS published FROM publish_attempts`
      expect({ attempts, published: total, deliveries }).toEqual({ attempts: 6_800, published: 6_800, deliveries: 6_800 })
      const scheduled = yield* call("GET", "/posts?status=scheduled")
      expect(scheduled.body.total).toBe(0)
    // Its figures are memory, not time: a busy machine (the suite runs files side by side) only makes it slower.
    }))
})
