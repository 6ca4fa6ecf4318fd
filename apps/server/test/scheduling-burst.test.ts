import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { makeLocalServer } from "./support/LocalServer.js"
import { publishingTeam } from "./support/Publishing.js"
import { makeTestServer } from "./support/TestServer.js"

setFlagsFromString("--expose-gc")
// The live data, after a full collection: what is held, not what awaits collection, nor the code and
// bytecode (code and trusted spaces) that V8 goes on compiling and optimizing while the server runs.
const gc = runInNewContext("gc") as () => void
const dataSpaces = new Set(["new_space", "old_space", "new_large_object_space", "large_object_space"])
const liveHeap = () => {
  gc()
  return getHeapSpaceStatistics().filter((space) => dataSpaces.has(space.space_name))
    .reduce((sum, space) => sum + space.space_used_size, 0)
}

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

layer(BurstServer, { excludeTestServices: true, timeout: 600_000 })("a burst of due posts", (it) => {
  it.scoped("is sent in bounded memory: the live heap grows no more for 2,000 due posts than for 200", () =>
    Effect.gen(function*() {
      let deliveries = 0
      const url = yield* makeLocalServer((request, response) => {
        request.resume()
        request.on("end", () => {
          deliveries++
          response.writeHead(204).end()
        })
      })
      const { call, connect, team } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url })
      const sql = yield* SqlClient.SqlClient

      /**
       * The most the live data grew above where it was before, sampled `samples` times while `count` due posts are
       * sent, at even steps of the sends: each sample is a full collection, which at a fixed pace would keep the
       * process collecting for most of the burst and a busy machine for minutes.
       */
      const burst = (count: number, samples: number) =>
        Effect.gen(function*() {
          const start = deliveries
          const before = liveHeap()
          yield* dueNow(team.id, hook.id, count)
          let peak = 0
          let taken = 0
          while (deliveries < start + count) {
            if (deliveries - start >= (taken * count) / samples) {
              peak = Math.max(peak, liveHeap() - before)
              taken++
            }
            yield* Effect.sleep("5 millis")
          }
          return peak
        })

      yield* burst(200, 20) // Warms the connections and caches that any burst sets up once.
      // The peak of 200 is taken over five bursts, as many samples as the one burst of 2,000 gets, since more samples
      // find a higher peak. A sample may still catch a few sends more or fewer under way (tens of KB each): 256 KiB
      // on top of the 10 %. Memory that grew with the number due (a sleeping execution per post, or a timer per
      // send) would be megabytes over, at the first samples or the last.
      let small = 0
      for (let i = 0; i < 5; i++) small = Math.max(small, yield* burst(200, 20))
      const large = yield* burst(2_000, 100)
      expect(large).toBeLessThanOrEqual(small * 1.1 + 256 * 1024)

      // Every post was published once, as recorded once its delivery's answer is in.
      const tally = sql<{ attempts: number; published: number }>`SELECT count(*)::int AS attempts,
          count(*) FILTER (WHERE result = 'published')::int AS published FROM publish_attempts`
      const until = Date.now() + 60_000
      while ((yield* tally)[0].published < 3_200 && Date.now() < until) yield* Effect.sleep("50 millis")
      const [{ attempts, published }] = yield* tally
      expect({ attempts, published, deliveries }).toEqual({ attempts: 3_200, published: 3_200, deliveries: 3_200 })
      const scheduled = yield* call("GET", "/posts?status=scheduled")
      expect(scheduled.body.total).toBe(0)
    // Its figures are memory, not time: a busy machine (the suite runs files side by side) only makes it slower.
    }), 600_000)
})
