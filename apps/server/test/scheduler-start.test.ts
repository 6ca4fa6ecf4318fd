import { expect, it } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Redacted } from "effect"
import { layerPostgres } from "../src/Database/Postgres.js"
import { layerEmbedded } from "../src/Database/Sql.js"
import { makeLocalReceiver } from "./support/LocalServer.js"
import { callsAs, createUserWithToken, freePort, spawnServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"

// How fast a start is with 100,000 of them is the benchmark's (bench/README.md, S10); here, what it sends.
const futureSchedules = 3_000
const minLeadSeconds = 1

/** Runs `use` on the database of `env` while no server holds it. */
const withDatabase = <A, E>(env: Record<string, string>, use: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.provide(
    use,
    env.DATABASE_URL !== undefined ? layerPostgres(Redacted.make(env.DATABASE_URL)) : layerEmbedded(env.DATA_DIR)
  ).pipe(Effect.orDie)

/**
 * A server process on `env` that answers, for the scope; then asked to end, and waited for: the embedded
 * database's folder is opened by one process at a time.
 */
const serving = (env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.flatMap(freePort, (port) =>
      Effect.promise(async () => {
        const server = spawnServer({ ...env, HOST: "127.0.0.1", PORT: String(port), LOG_LEVEL: "WARN" })
        const base = `http://127.0.0.1:${port}`
        let exited: number | null | undefined
        void server.exited.then((code) => (exited = code))
        while (!(await fetch(`${base}/health`).then((response) => response.ok, () => false))) {
          if (exited !== undefined) throw new Error(`the server exited with ${exited}:\n${server.lines.join("\n")}`)
          await new Promise((wait) => setTimeout(wait, 50))
        }
        return { ...server, base }
      })),
    (server) => Effect.promise(() => (server.child.kill("SIGTERM"), server.exited))
  )

/** Polls `check` every 20 ms; fails, with the server's log, after `seconds`. */
const until = (check: () => boolean, seconds: number, lines: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    const deadline = Date.now() + seconds * 1000
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`not within ${seconds} s; the server's log:\n${lines.join("\n")}`)
      await new Promise((wait) => setTimeout(wait, 20))
    }
  })

it.scopedLive(
  `a server started with ${futureSchedules.toLocaleString("en")} future schedules sends what is due at once, and nothing ahead`,
  () =>
    Effect.gen(function*() {
      const deliveries: Array<string> = []
      const receiverUrl = yield* makeLocalReceiver((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          deliveries.push(JSON.parse(Buffer.concat(chunks).toString("utf8")).data.postId)
          response.writeHead(204).end()
        })
      })
      const env = {
        ...(yield* freshDatabaseEnv),
        OUTBOUND_ALLOW_PRIVATE: "true",
        SCHEDULER_POLL_MS: "100",
        SCHEDULE_MIN_LEAD_SECONDS: String(minLeadSeconds)
      }

      // A team with a webhook account on the receiver and two drafts, made through a first server.
      const owner = yield* createUserWithToken(env)
      const { account, team, due, later } = yield* Effect.scoped(Effect.gen(function*() {
        const call = callsAs(yield* serving(env), owner.token)
        const organization = (yield* call("POST", "/v1/organizations", { name: "Start" })).body
        const team = (yield* call("POST", "/v1/teams", { organizationId: organization.id, name: "Team" })).body
        const account = (yield* call("POST", `/v1/teams/${team.id}/social-accounts`, { provider: "webhook", url: receiverUrl })).body
        const due = (yield* call("POST", `/v1/teams/${team.id}/posts`, { content: "Due" })).body
        const later = (yield* call("POST", `/v1/teams/${team.id}/posts`, { content: "Scheduled once started" })).body
        return { account, team, due, later }
      }))

      // While no server runs: the future schedules, a day ahead and beyond, and one post that came due meanwhile.
      yield* withDatabase(env, Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.all([
          sql`WITH made AS (
              INSERT INTO posts (team_id, content, status, scheduled_at, schedule_version, social_account_ids)
              SELECT ${team.id}, 'Later ' || g, 'scheduled', now() + interval '1 day' + g * interval '1 second', 1,
                ARRAY[${account.id}::uuid]
              FROM generate_series(1, ${futureSchedules}) g RETURNING id, scheduled_at)
            INSERT INTO post_targets (post_id, social_account_id, status, due_at)
            SELECT id, ${account.id}, 'pending', scheduled_at FROM made`,
          sql`UPDATE posts SET status = 'scheduled', scheduled_at = now(), schedule_version = 1 WHERE id = ${due.id}`,
          sql`INSERT INTO post_targets (post_id, social_account_id, status, due_at)
            VALUES (${due.id}, ${account.id}, 'pending', now())`
        ], { discard: true })))

      yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* serving(env)
        yield* until(() => deliveries.includes(due.id), 180, server.lines)
        // Then one post scheduled on the running server goes out: its scheduler has looked at what is due again
        // since, with the future schedules in the database.
        const scheduled = yield* callsAs(server, owner.token)("POST", `/v1/teams/${team.id}/posts/${later.id}/schedule`, {
          socialAccountIds: [account.id],
          scheduledAt: new Date(Date.now() + (minLeadSeconds + 4) * 1000).toISOString()
        })
        expect(scheduled.status).toBe(200)
        yield* until(() => deliveries.includes(later.id), 180, server.lines)
      }))
      // Each once: the post due at the start is not taken for an earlier process's unfinished send and sent again.
      expect([...deliveries].sort()).toEqual([due.id, later.id].sort())

      // Nothing ahead was tried: no attempt recorded for a future post, each still scheduled, its target pending.
      const untouched = yield* withDatabase(env, Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ attempts: number; pending: number }>`SELECT
            (SELECT count(*)::int FROM publish_attempts a JOIN posts p ON p.id = a.post_id
              WHERE p.content LIKE 'Later %') AS attempts,
            (SELECT count(*)::int FROM post_targets t JOIN posts p ON p.id = t.post_id
              WHERE p.content LIKE 'Later %' AND p.status = 'scheduled' AND t.status = 'pending') AS pending`))
      expect(untouched[0]).toEqual({ attempts: 0, pending: futureSchedules })
    })
)
