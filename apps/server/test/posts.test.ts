import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import { BlueskyNetwork } from "./support/BlueskyNetwork.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

const postFields = ["content", "createdAt", "createdBy", "firstComment", "id", "linkTracking", "media", "scheduledAt", "socialAccountIds", "status", "targets", "teamId", "thread", "updatedAt", "versions", "waitingUntil"]
const targetFields = ["creditsSpent", "deletedAt", "error", "externalId", "firstComment", "parts", "publishedAt", "socialAccountId", "status", "url"]

const ledgerOf = (organizationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ kind: string; amount: string; socialAccountId: string | null }>`SELECT kind, amount::text,
        social_account_id AS "socialAccountId"
      FROM credit_transactions WHERE organization_id = ${organizationId} ORDER BY created_at, kind`)

layer(Layer.merge(TestServer, BlueskyNetwork.layer()), { excludeTestServices: true })("posts", (it) => {
  describe("drafts", () => {
    it.scoped("create, read, change and delete a draft, with exactly the Post fields", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        const { admin, call, connect, team } = yield* publishingTeam()
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        const created = yield* call("POST", "/posts", { content: "Hello 👋", socialAccountIds: [hook.id] })
        expect(created.status).toBe(201)
        expect(Object.keys(created.body).sort()).toEqual(postFields)
        expect(created.body).toMatchObject({
          teamId: team.id,
          content: "Hello 👋",
          status: "draft",
          socialAccountIds: [hook.id],
          targets: [],
          media: [],
          createdBy: { userId: admin.user.id, apiKeyId: null }
        })
        const changed = yield* call("PATCH", `/posts/${created.body.id}`, { content: "Hello again", socialAccountIds: [] })
        expect(changed.status).toBe(200)
        expect(changed.body).toMatchObject({ content: "Hello again", socialAccountIds: [], status: "draft" })
        expect(Date.parse(changed.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.body.updatedAt))
        expect((yield* call("GET", `/posts/${created.body.id}`)).body).toEqual(changed.body)
        const deleted = yield* call("DELETE", `/posts/${created.body.id}`)
        expect(deleted).toMatchObject({ status: 200, body: { id: created.body.id } })
        expect((yield* call("GET", `/posts/${created.body.id}`)).status).toBe(404)
        expect((yield* call("DELETE", `/posts/${created.body.id}`)).status).toBe(404)
      }))

    it.effect("content is 1 to 10,000 characters, not blank; accounts are distinct accounts of the team", () =>
      Effect.gen(function*() {
        const { call } = yield* publishingTeam()
        expect((yield* call("POST", "/posts", { content: "x" })).status).toBe(201)
        expect((yield* call("POST", "/posts", { content: "🦋".repeat(10_000) })).status).toBe(201)
        for (const json of [{ content: "" }, { content: " \n\t" }, { content: "x".repeat(10_001) }, {}, { content: "x", extra: 1 }]) {
          const refused = yield* call("POST", "/posts", json)
          expect(refused.status, JSON.stringify(json).slice(0, 40)).toBe(400)
          expect(refused.body._tag).toBe("HttpApiDecodeError")
        }
        const id = randomUUID()
        const duplicate = yield* call("POST", "/posts", { content: "x", socialAccountIds: [id, id] })
        expect(duplicate.body.issues).toEqual([{ path: ["socialAccountIds"], message: "must be 0 to 50 distinct social account ids" }])
        const unknown = yield* call("POST", "/posts", { content: "x", socialAccountIds: [id] })
        expect(unknown).toMatchObject({ status: 404, body: { _tag: "NotFound", message: `Social account ${id} not found` } })
      }))

    it.scoped("lists the team's posts, filtered by status and account, and hides other teams' posts", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        const { call, connect, draft, postNow } = yield* publishingTeam()
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        const plain = yield* draft("plain")
        const meant = yield* draft("meant for the hook", [hook.id])
        const sent = yield* draft("sent")
        expect((yield* postNow(sent.id, [hook.id])).status).toBe(200)
        const all = yield* call("GET", "/posts?sortBy=updatedAt&sortOrder=asc")
        expect(all.body.total).toBe(3)
        for (const post of all.body.data) expect(Object.keys(post).sort()).toEqual(postFields)
        expect(all.body.data.map((post: any) => post.id)).toEqual([plain.id, meant.id, sent.id])
        expect((yield* call("GET", "/posts?status=draft")).body.data.map((post: any) => post.id).sort())
          .toEqual([plain.id, meant.id].sort())
        expect((yield* call("GET", "/posts?status=published")).body.data.map((post: any) => post.id)).toEqual([sent.id])
        expect((yield* call("GET", `/posts?socialAccountId=${hook.id}`)).body.data.map((post: any) => post.id).sort())
          .toEqual([meant.id, sent.id].sort())
        expect((yield* call("GET", "/posts?sortBy=name")).status).toBe(400)

        const stranger = yield* signUp()
        const elsewhere = yield* publishingTeam()
        expect((yield* elsewhere.call("GET", `/posts/${sent.id}`)).status).toBe(404)
        expect((yield* raw({ method: "GET", path: `/v1/teams/${elsewhere.team.id}/posts`, token: stranger.token })).status)
          .toBe(404)
        // A post sent is no longer a draft.
        expect((yield* call("PATCH", `/posts/${sent.id}`, { content: "changed" })).body._tag).toBe("Conflict")
        expect((yield* call("DELETE", `/posts/${sent.id}`)).status).toBe(409)
      }))
  })

  describe("post now", () => {
    it.scoped("publishes to Bluesky, Mastodon and a webhook at once, one failing: per-account results, outcome, status, credits", () =>
      Effect.gen(function*() {
        const network = yield* BlueskyNetwork
        const mastodon = yield* makeMastodonFake()
        const receiver = yield* makeWebhookReceiver
        const { call, connect, credit, draft, organization, postNow } = yield* publishingTeam(10)
        const pds = yield* Effect.promise(() => network.createAccount())
        const sky = yield* connect({ provider: "bluesky", handle: pds.handle, appPassword: pds.appPassword, serviceUrl: network.serviceUrl })
        const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        receiver.answerWith((_event, response) => response.writeHead(503).end())

        const text = "Launch day! https://example.com #postline"
        const post = yield* draft(text, [sky.id, toot.id, hook.id])
        const first = yield* postNow(post.id, [hook.id, sky.id, toot.id])
        expect(first.status).toBe(200)
        expect(first.body.postId).toBe(post.id)
        expect(first.body.outcome).toBe("partially_failed")
        expect(first.body.results.map((result: any) => [result.socialAccountId, result.status, result.creditsSpent])).toEqual([
          [hook.id, "failed", 0],
          [sky.id, "published", 1],
          [toot.id, "published", 1]
        ])
        expect(first.body.results[0].error).toEqual({ category: "transient", message: expect.stringContaining("503"), retryable: true })
        const [, skyResult, tootResult] = first.body.results
        expect(skyResult.externalId).toMatch(/^at:\/\/did:plc:/)
        expect(tootResult).toMatchObject({ externalId: mastodon.statuses[0].id, url: `${mastodon.url}/@alice/${mastodon.statuses[0].id}` })

        // At the providers: the post as sent, once each, with the key derived from the post and the account.
        const record = yield* Effect.promise(() => network.getRecord(skyResult.externalId))
        expect(record.text).toBe(text)
        expect(mastodon.statuses).toEqual([{ id: expect.any(String), text, idempotencyKey: `${post.id}:${toot.id}` }])
        expect(receiver.received).toHaveLength(1)
        expect(receiver.verify(receiver.received[0], hook.signingSecret!)).toMatchObject({
          type: "post.published",
          data: { postId: post.id, socialAccountId: hook.id, text }
        })

        const stored = (yield* call("GET", `/posts/${post.id}`)).body
        expect(stored.status).toBe("partially_published")
        for (const target of stored.targets) expect(Object.keys(target).sort()).toEqual(targetFields)
        expect(stored.targets.find((target: any) => target.socialAccountId === sky.id)).toMatchObject({
          status: "published",
          externalId: skyResult.externalId,
          error: null,
          creditsSpent: 1
        })
        expect(yield* credit).toEqual({ balance: 8, reserved: 0, available: 8 })

        // Sending again to where it was published gives 409 and sends nothing.
        const again = yield* postNow(post.id, [toot.id, hook.id])
        expect(again.status).toBe(409)
        expect(again.body.message).toContain(toot.id)
        expect(mastodon.statuses).toHaveLength(1)
        expect(receiver.received).toHaveLength(1)

        // A retry of the failed account alone.
        receiver.answerWith((_event, response) => response.writeHead(200, { "content-type": "application/json" }).end('{"id":"hook-1"}'))
        const retry = yield* postNow(post.id, [hook.id])
        expect(retry.body).toMatchObject({ outcome: "none_failed", results: [{ socialAccountId: hook.id, status: "published", externalId: "hook-1" }] })
        expect((yield* call("GET", `/posts/${post.id}`)).body.status).toBe("published")
        // The same webhook-id on both attempts, so the receiver can tell a repeat.
        expect(receiver.received[1].headers["webhook-id"]).toBe(receiver.received[0].headers["webhook-id"])

        expect((yield* ledgerOf(organization.id)).map((entry) => [entry.kind, entry.amount])).toEqual([
          ["reserve", "1"],
          ["reserve", "1"],
          ["spend", "1"],
          ["spend", "1"]
        ])
        const sql = yield* SqlClient.SqlClient
        const attempts = yield* sql<{ account: string; attempt: number; result: string; finished: boolean }>`SELECT
            social_account_id AS account, attempt, result, finished_at IS NOT NULL AS finished
          FROM publish_attempts WHERE post_id = ${post.id} ORDER BY social_account_id, attempt`
        expect(attempts.filter((attempt) => attempt.account === hook.id)).toEqual([
          { account: hook.id, attempt: 1, result: "failed", finished: true },
          { account: hook.id, attempt: 2, result: "published", finished: true }
        ])
      }))

    it.scoped("checks each text and account before sending: a refusal fails that account alone, at no cost", () =>
      Effect.gen(function*() {
        const network = yield* BlueskyNetwork
        const mastodon = yield* makeMastodonFake()
        const { call, connect, credit, draft, postNow } = yield* publishingTeam(5)
        const pds = yield* Effect.promise(() => network.createAccount())
        const sky = yield* connect({ provider: "bluesky", handle: pds.handle, appPassword: pds.appPassword, serviceUrl: network.serviceUrl })
        const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
        // 301 graphemes: over Bluesky's 300, within Mastodon's 500.
        const long = yield* draft("🦋".repeat(301))
        const result = yield* postNow(long.id, [sky.id, toot.id])
        expect(result.body.outcome).toBe("partially_failed")
        expect(result.body.results[0]).toMatchObject({
          status: "failed",
          creditsSpent: 0,
          error: { category: "invalid_content", message: expect.stringContaining("300"), retryable: false }
        })
        expect(result.body.results[1]).toMatchObject({ status: "published", creditsSpent: 1 })
        expect(yield* credit).toMatchObject({ balance: 4, reserved: 0 })

        // An account that needs reconnecting fails with auth, before anything is sent.
        mastodon.revokeToken()
        const note = yield* draft("short")
        const refused = yield* postNow(note.id, [toot.id])
        expect(refused.body).toMatchObject({
          outcome: "all_failed",
          results: [{ status: "failed", error: { category: "auth", retryable: false }, creditsSpent: 0 }]
        })
        const account = (yield* call("GET", `/social-accounts/${toot.id}`)).body
        expect(account).toMatchObject({ status: "reconnect_required", lastError: { category: "auth" } })
        const next = yield* draft("next")
        const before = mastodon.requests.length
        expect((yield* postNow(next.id, [toot.id])).body.results[0].error.message).toMatch(/needs reconnecting/)
        expect(mastodon.requests.length).toBe(before)
        expect((yield* call("GET", `/posts/${next.id}`)).body.status).toBe("failed")
        expect(yield* credit).toMatchObject({ balance: 4, reserved: 0 })
      }))

    it.scoped("402 when the credits are short, naming what is needed and available: nothing sent, nothing kept", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const network = yield* BlueskyNetwork
        const { call, connect, credit, draft, organization, postNow } = yield* publishingTeam(1)
        const pds = yield* Effect.promise(() => network.createAccount())
        const sky = yield* connect({ provider: "bluesky", handle: pds.handle, appPassword: pds.appPassword, serviceUrl: network.serviceUrl })
        const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
        const post = yield* draft("two accounts, one credit")
        const estimate = yield* call("POST", `/posts/${post.id}/estimate`, { socialAccountIds: [sky.id, toot.id] })
        expect(estimate.body).toEqual({
          total: 2,
          perAccount: [
            { socialAccountId: sky.id, credits: 1, publishes: 1, problems: [] },
            { socialAccountId: toot.id, credits: 1, publishes: 1, problems: [] }
          ],
          available: 1,
          sufficient: false,
          howToGetCredits: `Billing is off on this server, so an operator adds credits with \`pnpm admin credits grant --organization ${organization.id} --amount 1\``
        })
        const refused = yield* postNow(post.id, [sky.id, toot.id])
        expect(refused).toMatchObject({
          status: 402,
          body: { _tag: "PaymentRequired", message: `Publishing needs 2 credits and the organization has 1 available. Billing is off on this server, so an operator adds credits with \`pnpm admin credits grant --organization ${organization.id} --amount 1\`` }
        })
        expect(mastodon.statuses).toEqual([])
        expect((yield* call("GET", `/posts/${post.id}`)).body).toMatchObject({ status: "draft", targets: [] })
        expect(yield* ledgerOf(organization.id)).toEqual([])
        expect(yield* credit).toEqual({ balance: 1, reserved: 0, available: 1 })
        expect((yield* postNow(post.id, [toot.id])).body.outcome).toBe("none_failed")
        expect(yield* credit).toEqual({ balance: 0, reserved: 0, available: 0 })
      }))

    it.scoped("credentials the server cannot read fail that account as auth, ask for a reconnect, and send nothing", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        const { call, connect, draft, postNow } = yield* publishingTeam()
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        const sql = yield* SqlClient.SqlClient
        // As if encrypted with a key this server has never had.
        yield* sql`UPDATE social_accounts SET credentials = 'v1.AAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
          WHERE id = ${hook.id}`
        const post = yield* draft("Locked out")
        const answer = yield* postNow(post.id, [hook.id])
        expect(answer.status).toBe(200)
        expect(answer.body.results[0]).toMatchObject({
          status: "failed",
          error: { category: "auth", retryable: false, message: expect.stringContaining("PATCH") },
          creditsSpent: 0
        })
        const account = (yield* call("GET", `/social-accounts/${hook.id}`)).body
        expect(account).toMatchObject({ status: "reconnect_required", lastError: { category: "auth" } })
        expect(receiver.received).toEqual([])
      }))

    it.scoped("an invisible account, an unknown post or another team's post give 404 and send nothing", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        const { connect, draft, postNow } = yield* publishingTeam()
        const other = yield* publishingTeam()
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        const foreign = yield* other.connect({ provider: "webhook", url: receiver.url })
        const post = yield* draft("hello")
        const invisible = yield* postNow(post.id, [hook.id, foreign.id])
        expect(invisible).toMatchObject({ status: 404, body: { message: `Social account ${foreign.id} not found` } })
        const missing = randomUUID()
        expect((yield* postNow(missing, [hook.id])).body).toEqual({ _tag: "NotFound", message: `Post ${missing} not found` })
        expect((yield* other.postNow(post.id, [foreign.id])).status).toBe(404)
        for (const socialAccountIds of [[], Array.from({ length: 51 }, () => randomUUID()), [hook.id, hook.id]]) {
          expect((yield* postNow(post.id, socialAccountIds)).status).toBe(400)
        }
        expect(receiver.received).toEqual([])
      }))

    it.scoped("fifty concurrent publishes with credits for ten: exactly ten go out and the balance ends at 0", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const { connect, credit, draft, postNow } = yield* publishingTeam(10)
        const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
        const drafts = yield* Effect.forEach(Array.from({ length: 50 }, (_, i) => `post ${i}`), (text) => draft(text))
        const answers = yield* Effect.forEach(drafts, (post) => postNow(post.id, [toot.id]), { concurrency: "unbounded" })
        expect(answers.filter((answer) => answer.status === 200)).toHaveLength(10)
        expect(answers.filter((answer) => answer.status === 402)).toHaveLength(40)
        expect(mastodon.statuses).toHaveLength(10)
        expect(yield* credit).toEqual({ balance: 0, reserved: 0, available: 0 })
      }))
  })

  describe("Idempotency-Key", () => {
    it.scoped("a retry with the key gets the first answer byte for byte and publishes nothing again", () =>
      Effect.gen(function*() {
        const mastodon = yield* makeMastodonFake()
        const { connect, draft, postNow } = yield* publishingTeam(5)
        const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
        const post = yield* draft("once")
        const key = randomUUID()
        const first = yield* postNow(post.id, [toot.id], key)
        expect(first.status).toBe(200)
        expect(first.headers.get("idempotent-replayed")).toBeNull()
        const replay = yield* postNow(post.id, [toot.id], key)
        expect(replay.status).toBe(200)
        expect(replay.headers.get("idempotent-replayed")).toBe("true")
        expect(JSON.stringify(replay.body)).toBe(JSON.stringify(first.body))
        expect(mastodon.statuses).toHaveLength(1)

        // The same key with another request: 400, and nothing runs.
        const other = yield* draft("other")
        const mismatch = yield* postNow(other.id, [toot.id], key)
        expect(mismatch).toMatchObject({ status: 400, body: { _tag: "BadRequest" } })
        expect(mismatch.body.message).toMatch(/different request/)
        expect(mastodon.statuses).toHaveLength(1)

        // A 4xx answer is kept as well: the replay of a refusal is the same refusal.
        const refusedKey = randomUUID()
        const conflict = yield* postNow(post.id, [toot.id], refusedKey)
        expect(conflict.status).toBe(409)
        const conflictAgain = yield* postNow(post.id, [toot.id], refusedKey)
        expect(conflictAgain.headers.get("idempotent-replayed")).toBe("true")
        expect(conflictAgain.body).toEqual(conflict.body)

        for (const bad of ["x".repeat(256), "naïve"]) {
          const refused = yield* postNow(other.id, [toot.id], bad)
          expect(refused.status).toBe(400)
          expect(refused.body._tag).toBe("HttpApiDecodeError")
        }
        expect(mastodon.statuses).toHaveLength(1)
      }))

    it.scoped("the same key while the first request runs gives 409; a key is the caller's own", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        const { admin, connect, draft, postNow, team } = yield* publishingTeam()
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        const post = yield* draft("slow")
        let release: () => void = () => {}
        receiver.answerWith((_event, response) => {
          release = () => response.writeHead(204).end()
        })
        const key = randomUUID()
        const first = yield* Effect.fork(postNow(post.id, [hook.id], key))
        yield* Effect.promise(async () => {
          while (receiver.received.length === 0) await new Promise((wait) => setTimeout(wait, 10))
        })
        const during = yield* postNow(post.id, [hook.id], key)
        expect(during).toMatchObject({ status: 409, body: { _tag: "Conflict" } })
        expect(during.body.message).toMatch(/still being processed/)
        release()
        expect((yield* first).status).toBe(200)
        expect(receiver.received).toHaveLength(1)

        // Another caller's same key is another key: here it finds the post published (409), not the stored answer.
        const colleague = yield* signUp()
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO memberships (user_id, organization_id, role)
          SELECT ${colleague.user.id}, organization_id, 'member' FROM teams WHERE id = ${team.id}`
        const theirs = yield* raw({
          method: "POST",
          path: `/v1/teams/${team.id}/posts/${post.id}/post-now`,
          token: colleague.token,
          json: { socialAccountIds: [hook.id] },
          headers: { "idempotency-key": key }
        })
        expect(theirs.status).toBe(409)
        expect(theirs.headers.get("idempotent-replayed")).toBeNull()
        expect(admin.user.id).not.toBe(colleague.user.id)
      }))
  })

  describe("credits", () => {
    it.effect("members see the balance; the ledger is for admins, owners and API keys", () =>
      Effect.gen(function*() {
        const { admin, organization } = yield* publishingTeam(3)
        const member = yield* signUp()
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${member.user.id}, ${organization.id}, 'member')`
        const path = `/v1/organizations/${organization.id}/credits`
        expect((yield* raw({ method: "GET", path, token: member.token })).body).toEqual({ balance: 3, reserved: 0, available: 3 })
        expect((yield* raw({ method: "GET", path: `${path}/transactions`, token: member.token })).status).toBe(403)
        const ledger = yield* raw({ method: "GET", path: `${path}/transactions`, token: admin.token })
        expect(ledger.body).toMatchObject({ data: [], total: 0 })
        expect((yield* raw({ method: "GET", path: `${path}/transactions?sortBy=name`, token: admin.token })).status).toBe(400)
      }))
  })
})
