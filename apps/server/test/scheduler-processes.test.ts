import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import Pg from "pg"
import { makeLocalReceiver } from "./support/LocalServer.js"
import { createUserWithToken, type ServerProcess, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, testDatabaseKind } from "./support/TestDatabase.js"
import { eventually } from "./support/Waiting.js"

/** Webhook calls as a receiver sees them: each carries its post, its account and its webhook-id. */
const makeReceiver = Effect.gen(function*() {
  const calls: Array<{ post: string; account: string; id: string }> = []
  const url = yield* makeLocalReceiver((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const event = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      calls.push({ post: event.data.postId, account: event.data.socialAccountId, id: String(request.headers["webhook-id"]) })
      response.writeHead(204).end()
    })
  })
  return { url, calls }
})

/**
 * The (post, account) pairs that reached the receiver. A call repeated after a crash carries the same
 * webhook-id, derived from the post and the account, so a receiver that de-duplicates sees one publish.
 */
const published = (calls: ReadonlyArray<{ post: string; account: string; id: string }>) =>
  new Set(calls.map((call) => `${call.post}/${call.account}/${call.id}`)).size

const request = (server: ServerProcess, token: string) => async (method: string, path: string, json?: unknown) => {
  const response = await fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(json ? { "content-type": "application/json" } : {}) },
    ...(json ? { body: JSON.stringify(json) } : {})
  })
  return { status: response.status, body: (await response.json()) as any }
}

const api = (server: ServerProcess, token: string) => (method: string, path: string, json?: unknown): Effect.Effect<any> =>
  Effect.promise(async () => {
    const { body, status } = await request(server, token)(method, path, json)
    if (status >= 300) throw new Error(`${method} ${path}: ${status} ${JSON.stringify(body)}`)
    return body
  })

/** A team with three webhook accounts on `receiver`, set up through `server`. */
const teamWithAccounts = (call: ReturnType<typeof api>, receiverUrl: string) =>
  Effect.gen(function*() {
    const organization = yield* call("POST", "/v1/organizations", { name: "Scheduler" })
    const team = yield* call("POST", "/v1/teams", { organizationId: organization.id, name: "Team" })
    const accounts: Array<string> = []
    for (const path of ["a", "b", "c"]) {
      accounts.push((yield* call("POST", `/v1/teams/${team.id}/social-accounts`, { provider: "webhook", url: `${receiverUrl}/${path}` })).id)
    }
    return { teamId: team.id as string, accounts }
  })

const until = (check: () => boolean, seconds: number) =>
  Effect.promise(async () => {
    const deadline = Date.now() + seconds * 1000
    while (!check() && Date.now() < deadline) await new Promise((wait) => setTimeout(wait, 200))
  })

const minLeadSeconds = 1
// A send that a killed process left unfinished is taken over by another process 10 s after it began.
const schedulingEnv = {
  LOG_LEVEL: "WARN",
  OUTBOUND_ALLOW_PRIVATE: "true",
  SCHEDULE_MIN_LEAD_SECONDS: String(minLeadSeconds),
  SCHEDULER_POLL_MS: "250",
  PUBLISH_TIMEOUT_SECONDS: "4",
  PUBLISH_RECOVERY_SECONDS: "10"
}

/**
 * Schedules the post at `planned`, or later when the machine is so busy that `planned` is too soon by the time
 * the server reads the request. The server's clock is the one that decides: when it answers that the time is
 * too soon, the schedule is asked again for later. A busy machine delays the burst instead of failing the test.
 */
const scheduleFrom = (server: ServerProcess, token: string, teamId: string) =>
(postId: string, socialAccountIds: ReadonlyArray<string>, planned: number): Effect.Effect<any> =>
  Effect.promise(async () => {
    for (let tries = 1;; tries++) {
      const scheduledAt = new Date(Math.max(planned, Date.now() + (minLeadSeconds + 1) * 1000)).toISOString()
      const path = `/v1/teams/${teamId}/posts/${postId}/schedule`
      const { body, status } = await request(server, token)("POST", path, { socialAccountIds, scheduledAt })
      if (status < 300) return body
      // Ten refusals are not a busy machine.
      if (tries === 10 || status !== 400 || !String(body.message).startsWith("scheduledAt must be at least")) {
        throw new Error(`POST ${path}: ${status} ${JSON.stringify(body)}`)
      }
    }
  })

describe("scheduled posts across server processes", () => {
  it.scopedLive.skipIf(testDatabaseKind !== "postgres")(
    "two processes publish 200 posts to 3 accounts each exactly once, also when one is killed mid-run",
    () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver
        const env: Record<string, string> = { ...(yield* freshDatabaseEnv), ...schedulingEnv }
        const owner = yield* createUserWithToken(env)
        const first = yield* startServer(env)
        const second = yield* startServer(env)
        const calls = [api(first, owner.token), api(second, owner.token)]
        const { accounts, teamId } = yield* teamWithAccounts(calls[0], receiver.url)

        const posts = yield* Effect.forEach(Array.from({ length: 200 }, (_, i) => i), (i) =>
          calls[i % 2]("POST", `/v1/teams/${teamId}/posts`, { content: `Post ${i}` }), { concurrency: 8 })
        // Due within the same few seconds, once every schedule is made.
        const dueAt = new Date(Date.now() + 30_000)
        const schedules = [scheduleFrom(first, owner.token, teamId), scheduleFrom(second, owner.token, teamId)]
        yield* Effect.forEach(posts, (post, i) => schedules[i % 2](post.id, accounts, dueAt.getTime() + (i % 4) * 500), { concurrency: 8 })

        // Mid-run, the first process dies without a word; the second takes its share over.
        yield* until(() => receiver.calls.length >= 60, 180)
        first.child.kill("SIGKILL")
        yield* until(() => published(receiver.calls) >= 600, 180)
        yield* Effect.sleep("2 seconds")
        expect(published(receiver.calls)).toBe(600)
        // A post whose last send the killed process recorded but whose status it had not yet brought up to date
        // is settled by the other's recovery, every PUBLISH_RECOVERY_SECONDS / 4 (2.5 s here).
        const publishedPosts = yield* eventually(
          calls[1]("GET", `/v1/teams/${teamId}/posts?status=published&limit=100`),
          (page) => page.total === 200
        )
        expect(publishedPosts.total).toBe(200)
        // Each target was recorded published once, whichever process sent it and however often it was tried.
        const attempts = yield* Effect.promise(async () => {
          const client = new Pg.Client({ connectionString: env.DATABASE_URL })
          await client.connect()
          const { rows } = await client.query(`SELECT count(*)::int AS published,
              count(DISTINCT (post_id, social_account_id))::int AS targets FROM publish_attempts WHERE result = 'published'`)
          await client.end()
          return rows[0]
        })
        expect(attempts).toEqual({ published: 600, targets: 600 })
      })
  )

  it.scopedLive.skipIf(testDatabaseKind !== "embedded")(
    "one embedded process killed while posts are due publishes them all once after its restart, late ones at start",
    () =>
      Effect.gen(function*() {
        const receiver = yield* makeReceiver
        const env = { ...(yield* freshDatabaseEnv), ...schedulingEnv }
        const owner = yield* createUserWithToken(env)
        const server = yield* startServer(env)
        const call = api(server, owner.token)
        const { accounts, teamId } = yield* teamWithAccounts(call, receiver.url)
        const posts = yield* Effect.forEach(Array.from({ length: 20 }, (_, i) => i), (i) =>
          call("POST", `/v1/teams/${teamId}/posts`, { content: `Post ${i}` }))
        const soon = Date.now() + 6000
        const schedule = scheduleFrom(server, owner.token, teamId)
        // Half are due while the server runs, half while it is down.
        for (const [i, post] of posts.entries()) yield* schedule(post.id, accounts, soon + (i % 2) * 6000)
        yield* until(() => receiver.calls.length > 0, 180)
        server.child.kill("SIGKILL")
        yield* Effect.promise(() => server.exited)
        yield* Effect.sleep("8 seconds")
        expect(published(receiver.calls)).toBeLessThan(60)

        const restarted = yield* startServer(env)
        yield* until(() => published(receiver.calls) >= 60, 180)
        // A post is published once its answers are recorded, a moment after the receiver has them: waited for,
        // since a busy machine makes that moment long.
        const publishedPosts = yield* eventually(
          api(restarted, owner.token)("GET", `/v1/teams/${teamId}/posts?status=published`),
          (page) => page.total === 20
        )
        expect(publishedPosts.total).toBe(20)
        expect(published(receiver.calls)).toBe(60)
      })
  )
})
