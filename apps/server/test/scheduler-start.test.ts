import { expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Redacted } from "effect"
import { layerPostgres } from "../src/Database/Postgres.js"
import { layerEmbedded } from "../src/Database/Sql.js"
import { makeLocalServer } from "./support/LocalServer.js"
import { callsAs, createUserWithToken, freePort, spawnServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"

const futureSchedules = 100_000
// Starts of each kind, taken in turn: the quickest of each is compared, so more of them make a busy machine (the
// suite runs files side by side) less likely to slow every one of a kind.
const runs = 5

/** Runs `use` on the database of `env` while no server holds it. */
const withDatabase = <A, E>(env: Record<string, string>, use: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.provide(
    use,
    env.DATABASE_URL !== undefined ? layerPostgres(Redacted.make(env.DATABASE_URL)) : layerEmbedded(env.DATA_DIR)
  ).pipe(Effect.orDie)

/** A server process on `env` until `stop`, which asks it to end and waits until it has. */
const runServer = (env: Record<string, string>) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const server = spawnServer({ ...env, HOST: "127.0.0.1", PORT: String(port), LOG_LEVEL: "WARN", SCHEDULER_POLL_MS: "100" })
    const stop = Effect.promise(() => {
      server.child.kill("SIGTERM")
      return server.exited
    })
    return { ...server, base: `http://127.0.0.1:${port}`, stop }
  })

const untilUp = (base: string) =>
  Effect.promise(async () => {
    for (;;) {
      if (await fetch(`${base}/health`).then((response) => response.ok, () => false)) return
      await new Promise((wait) => setTimeout(wait, 50))
    }
  })

it.scopedLive(
  `a server starts as fast with ${futureSchedules.toLocaleString("en")} future schedules as with none, and sends what is due at once`,
  () =>
    Effect.gen(function*() {
      const arrivals = new Map<string, number>()
      const receiverUrl = yield* makeLocalServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          arrivals.set(JSON.parse(Buffer.concat(chunks).toString("utf8")).data.postId, Date.now())
          response.writeHead(204).end()
        })
      })

      /** A database with a team, its webhook account on the receiver, `runs` drafts, and `future` schedules ahead. */
      const setUp = (future: number) =>
        Effect.gen(function*() {
          const env = { ...(yield* freshDatabaseEnv), OUTBOUND_ALLOW_PRIVATE: "true" }
          const owner = yield* createUserWithToken(env)
          const server = yield* runServer(env)
          yield* untilUp(server.base)
          const call = callsAs(server, owner.token)
          const organization = (yield* call("POST", "/v1/organizations", { name: "Start" })).body
          const team = (yield* call("POST", "/v1/teams", { organizationId: organization.id, name: "Team" })).body
          const account = (yield* call("POST", `/v1/teams/${team.id}/social-accounts`, { provider: "webhook", url: receiverUrl })).body
          const drafts: Array<string> = []
          for (let i = 0; i < runs; i++) drafts.push((yield* call("POST", `/v1/teams/${team.id}/posts`, { content: `Due ${i}` })).body.id)
          yield* server.stop
          yield* withDatabase(env, Effect.flatMap(SqlClient.SqlClient, (sql) =>
            sql`WITH made AS (
                INSERT INTO posts (team_id, content, status, scheduled_at, schedule_version, social_account_ids)
                SELECT ${team.id}, 'Later ' || g, 'scheduled', now() + interval '1 day' + g * interval '1 second', 1,
                  ARRAY[${account.id}::uuid]
                FROM generate_series(1, ${future}) g RETURNING id, scheduled_at)
              INSERT INTO post_targets (post_id, social_account_id, status, due_at)
              SELECT id, ${account.id}, 'pending', scheduled_at FROM made`))
          return { env, accountId: account.id as string, drafts }
        })

      /** From the process's spawn until the post that was due when it started has reached the receiver. */
      const startWithOneDue = (database: Effect.Effect.Success<ReturnType<typeof setUp>>, run: number) =>
        Effect.gen(function*() {
          const postId = database.drafts[run]
          yield* withDatabase(database.env, Effect.flatMap(SqlClient.SqlClient, (sql) =>
            Effect.zipRight(
              sql`UPDATE posts SET status = 'scheduled', scheduled_at = now(), schedule_version = 1 WHERE id = ${postId}`,
              sql`INSERT INTO post_targets (post_id, social_account_id, status, due_at)
                VALUES (${postId}, ${database.accountId}, 'pending', now())`
            )))
          const startedAt = Date.now()
          const server = yield* runServer(database.env)
          const exited = server.exited.then((code) => `exited with ${code}:\n${server.lines.join("\n")}`)
          yield* Effect.promise(async () => {
            while (!arrivals.has(postId)) {
              const early = await Promise.race([exited, new Promise((wait) => setTimeout(wait, 20))])
              if (typeof early === "string") throw new Error(`the server ${early}`)
            }
          })
          const took = arrivals.get(postId)! - startedAt
          yield* server.stop
          return took
        })

      const empty = yield* setUp(0)
      const loaded = yield* setUp(futureSchedules)
      const times = { empty: [] as Array<number>, loaded: [] as Array<number> }
      for (let run = 0; run < runs; run++) {
        times.empty.push(yield* startWithOneDue(empty, run))
        times.loaded.push(yield* startWithOneDue(loaded, run))
      }
      // The quickest of each: what the start costs, without the machine's other work.
      expect(Math.min(...times.loaded)).toBeLessThanOrEqual(1.5 * Math.min(...times.empty))

      // Nothing ahead was sent: only the posts that were due.
      expect(arrivals.size).toBe(2 * runs)
    }),
  240_000
)
