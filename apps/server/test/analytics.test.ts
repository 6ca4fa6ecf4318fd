import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import type { PostId, SocialAccountId, TeamId } from "@postline/domain"
import { ConfigProvider, Effect, Fiber, Layer, TestClock, TestContext } from "effect"
import { randomUUID } from "node:crypto"
import { AnalyticsSnapshots } from "../src/Analytics/Snapshots.js"
import { retryAt, snapshotOffsetsSeconds } from "../src/Analytics/Schedule.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { LocalProviders } from "./support/Providers.js"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"
import { eventually } from "./support/Waiting.js"

const analyticsLedgerOf = (organizationId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ amount: number; postId: string | null; socialAccountId: string }>`SELECT amount::float8 AS amount,
        post_id AS "postId", social_account_id AS "socialAccountId"
      FROM credit_transactions WHERE organization_id = ${organizationId} AND kind = 'analytics' ORDER BY balance_after DESC`)

/** A team with `credits`, a Mastodon account (on the fake) and a webhook, and a post published to both. */
const publishedToMastodonAndWebhook = (credits: number) =>
  Effect.gen(function*() {
    const mastodon = yield* makeMastodonFake()
    const receiver = yield* makeWebhookReceiver
    const team = yield* publishingTeam(credits)
    const toot = yield* team.connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
    const hook = yield* team.connect({ provider: "webhook", url: receiver.url })
    const publish = (content: string) =>
      Effect.gen(function*() {
        const post = yield* team.draft(content)
        const sent = yield* team.postNow(post.id, [toot.id, hook.id])
        expect(sent.body.outcome).toBe("none_failed")
        return { id: post.id as PostId, statusId: sent.body.results[0].externalId as string }
      })
    const teamId = team.team.id as TeamId
    const client = team.admin.client.analytics
    return { ...team, mastodon, toot, hook, publish, teamId, client }
  })

/** Targets in the post's order, which is by account id for accounts published to at once. */
const inPostOrder = <T extends { readonly socialAccountId: string }>(targets: ReadonlyArray<T>) =>
  [...targets].sort((a, b) => (a.socialAccountId < b.socialAccountId ? -1 : 1))

const mastodonTarget = (analytics: { readonly targets: ReadonlyArray<any> }) =>
  analytics.targets.find((target) => target.provider === "mastodon")

// The scheduled snapshots' worker of this process, run by the tests on their own clock.
const Snapshots = AnalyticsSnapshots.Default.pipe(Layer.provide(LocalProviders))

layer(Layer.provideMerge(Snapshots, TestServer), { excludeTestServices: true })("analytics", (it) => {
  describe("post analytics", () => {
    it.scoped("no snapshot before a read; an estimate, then a paid refresh reads Mastodon now, with the link clicks; webhooks are free", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(5)
        const post = yield* team.publish("Hello")
        const path = { teamId: team.teamId, postId: post.id }
        const toot = team.toot.id as SocialAccountId
        const hook = team.hook.id as SocialAccountId
        // The credits of publishing to Mastodon (1) are spent: 4 left.
        expect(yield* team.credit).toEqual({ balance: 4, reserved: 0, available: 4 })

        expect(yield* team.client.getPostAnalytics({ urlParams: {}, path })).toEqual({
          postId: post.id,
          targets: inPostOrder([
            { socialAccountId: toot, provider: "mastodon", externalId: post.statusId, latest: null, series: [] },
            { socialAccountId: hook, provider: "webhook", externalId: expect.any(String), latest: null, series: [] }
          ])
        })
        expect(yield* team.client.estimatePostAnalyticsRefresh({ path })).toEqual({
          total: 1,
          perAccount: inPostOrder([{ socialAccountId: toot, credits: 1 }, { socialAccountId: hook, credits: 0 }]),
          available: 4,
          sufficient: true
        })

        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO post_links (post_id, code, url, clicks) VALUES (${post.id}, ${randomUUID()}, 'https://example.com', 3),
          (${post.id}, ${randomUUID()}, 'https://example.org', 2)`
        team.mastodon.setCounts(post.statusId, { favourites_count: 7, reblogs_count: 2, replies_count: 1, quotes_count: 0 })
        const before = team.mastodon.requests.length
        const refreshed = yield* team.client.refreshPostAnalytics({ path, headers: {} })
        expect(team.mastodon.requests.slice(before).map(({ method, path }) => `${method} ${decodeURIComponent(path)}`))
          .toEqual([`GET /api/v1/statuses?id[]=${post.statusId}`])
        const snapshot = { takenAt: expect.any(String), likes: 7, reposts: 2, replies: 1, quotes: 0, views: null, linkClicks: 5 }
        expect(refreshed.targets).toEqual(inPostOrder([
          { socialAccountId: toot, provider: "mastodon", externalId: post.statusId, latest: snapshot, series: [snapshot] },
          { socialAccountId: hook, provider: "webhook", externalId: expect.any(String), latest: null, series: [] }
        ]))
        expect(yield* team.client.getPostAnalytics({ urlParams: {}, path })).toEqual(refreshed)
        expect(yield* team.credit).toEqual({ balance: 3, reserved: 0, available: 3 })
        expect(yield* analyticsLedgerOf(team.organization.id)).toEqual([{ amount: 1, postId: post.id, socialAccountId: toot }])
        // The provider's answer is stored as a JSON object, not a JSON string of one.
        const [stored] = yield* sql<{ kind: string; raw: string }>`SELECT jsonb_typeof(raw) AS kind, raw::text AS raw
          FROM post_snapshots WHERE post_id = ${post.id}`
        expect(stored!.kind).toBe("object")
        expect(JSON.parse(stored!.raw)).toMatchObject({ id: post.statusId, favourites_count: 7, content: "<p>Hello</p>" })
      }))

    it.scoped("a refresh with an Idempotency-Key is paid once and replayed; 402 when the credits are short, nothing read", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(3)
        const post = yield* team.publish("Hello")
        const refresh = (key?: string) =>
          team.call("POST", `/posts/${post.id}/analytics/refresh`, undefined, key === undefined ? undefined : { "idempotency-key": key })
        const first = yield* refresh("refresh-1")
        expect(first.status).toBe(200)
        expect(first.headers.get("idempotent-replayed")).toBeNull()
        const again = yield* refresh("refresh-1")
        expect(again.status).toBe(200)
        expect(again.headers.get("idempotent-replayed")).toBe("true")
        expect(again.body).toEqual(first.body)
        expect(yield* team.credit).toEqual({ balance: 1, reserved: 0, available: 1 })
        expect(mastodonTarget((yield* refresh("refresh-2")).body).series).toHaveLength(2)
        expect(yield* team.credit).toEqual({ balance: 0, reserved: 0, available: 0 })

        const before = team.mastodon.requests.length
        const short = yield* refresh()
        expect(short.status).toBe(402)
        expect(short.body).toEqual({
          _tag: "PaymentRequired",
          reason: "insufficient_credits",
          message: "Reading analytics needs 1 credit and the organization has 0 available. " +
            `Billing is off on this server, so an operator adds credits with \`pnpm admin credits grant --organization ${team.organization.id} --amount 1\``
        })
        expect(team.mastodon.requests.length).toBe(before)
        expect(mastodonTarget(yield* team.client.getPostAnalytics({ urlParams: {}, path: { teamId: team.teamId, postId: post.id } })).series)
          .toHaveLength(2)
        expect(yield* team.client.estimatePostAnalyticsRefresh({ path: { teamId: team.teamId, postId: post.id } }))
          .toMatchObject({ total: 1, available: 0, sufficient: false })
        expect(yield* analyticsLedgerOf(team.organization.id)).toHaveLength(2)
      }))

    it.scoped("the spend cap stops a refresh before anything is read, naming the cap; the estimates say it does not fit", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(10)
        const post = yield* team.publish("Hello")
        // Publishing spent 1 of a cap of 1 this month: the credits are there, the cap is not.
        const capped = yield* raw({
          method: "PATCH",
          path: `/v1/organizations/${team.organization.id}/billing/spend-cap`,
          token: team.admin.token,
          json: { monthlyCredits: 1 }
        })
        expect(capped.status).toBe(200)
        const before = team.mastodon.requests.length
        const refused = {
          status: 402,
          body: {
            _tag: "PaymentRequired",
            message: "This needs 1 credit, beyond the organization's monthly spend cap of 1 credit (1 spent this month); " +
              "an admin or owner may raise the cap"
          }
        }
        expect(yield* team.call("POST", `/posts/${post.id}/analytics/refresh`)).toMatchObject(refused)
        expect(yield* team.call("POST", `/social-accounts/${team.toot.id}/analytics/refresh`)).toMatchObject(refused)
        expect(team.mastodon.requests.length).toBe(before)
        expect(yield* team.client.estimatePostAnalyticsRefresh({ path: { teamId: team.teamId, postId: post.id } }))
          .toMatchObject({ total: 1, available: 9, sufficient: false })
        expect(yield* team.client.estimateAccountAnalyticsRefresh({ path: { teamId: team.teamId, socialAccountId: team.toot.id as SocialAccountId } }))
          .toMatchObject({ total: 1, available: 9, sufficient: false })
        // Publishing's estimate says the same of a publish to Mastodon; a free one fits.
        const next = yield* team.draft("Next")
        const estimate = (socialAccountIds: ReadonlyArray<string>) =>
          Effect.map(team.call("POST", `/posts/${next.id}/estimate`, { socialAccountIds }), (answer) => answer.body)
        expect(yield* estimate([team.toot.id])).toMatchObject({ total: 1, available: 9, sufficient: false })
        expect(yield* estimate([team.hook.id])).toMatchObject({ total: 0, available: 9, sufficient: true })
        expect(yield* analyticsLedgerOf(team.organization.id)).toEqual([])
        expect(yield* team.credit).toEqual({ balance: 9, reserved: 0, available: 9 })
      }))

    it.scoped("a refresh's charge and the answer its Idempotency-Key replays commit together: when the answer cannot be kept, nothing is paid", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(3)
        const post = yield* team.publish("Hello")
        const sql = yield* SqlClient.SqlClient
        // Keeping this key's answer fails, as a database might just after the charge.
        yield* sql.unsafe(`CREATE OR REPLACE FUNCTION refuse_refresh_answer() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.key = 'refresh-unkept' AND NEW.response_status IS NOT NULL THEN RAISE EXCEPTION 'no answer kept'; END IF;
          RETURN NEW; END $$`)
        yield* sql.unsafe(`CREATE TRIGGER refuse_refresh_answer BEFORE UPDATE ON idempotency_keys
          FOR EACH ROW EXECUTE FUNCTION refuse_refresh_answer()`)
        const refresh = () => team.call("POST", `/posts/${post.id}/analytics/refresh`, undefined, { "idempotency-key": "refresh-unkept" })
        expect((yield* refresh()).status).toBe(500)
        expect(yield* team.credit).toEqual({ balance: 2, reserved: 0, available: 2 })
        expect(yield* analyticsLedgerOf(team.organization.id)).toEqual([])
        expect(mastodonTarget(yield* team.client.getPostAnalytics({ urlParams: {}, path: { teamId: team.teamId, postId: post.id } })).series)
          .toEqual([])

        yield* sql.unsafe(`DROP TRIGGER refuse_refresh_answer ON idempotency_keys`)
        const paid = yield* refresh()
        expect(paid.status).toBe(200)
        const replayed = yield* refresh()
        expect(replayed.headers.get("idempotent-replayed")).toBe("true")
        expect(replayed.body).toEqual(paid.body)
        expect(yield* team.credit).toEqual({ balance: 1, reserved: 0, available: 1 })
        expect(yield* analyticsLedgerOf(team.organization.id)).toHaveLength(1)
      }))

    it.scoped("an account removed while a refresh reads it: 404 naming it, nothing charged or stored", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(3)
        const post = yield* team.publish("Hello")
        const statusReads = () => team.mastodon.requests.filter(({ path }) => path.startsWith("/api/v1/statuses?"))
        const release = team.mastodon.holdNext()
        const refreshing = yield* Effect.fork(team.call("POST", `/posts/${post.id}/analytics/refresh`))
        yield* eventually(Effect.sync(() => statusReads().length), (reads) => reads === 1)
        expect((yield* team.call("DELETE", `/social-accounts/${team.toot.id}`)).status).toBe(200)
        release()
        const refreshed = yield* Fiber.join(refreshing)
        expect(refreshed.status).toBe(404)
        expect(refreshed.body).toEqual({ _tag: "NotFound", message: `Social account ${team.toot.id} not found` })
        expect(yield* team.credit).toEqual({ balance: 2, reserved: 0, available: 2 })
        expect(yield* analyticsLedgerOf(team.organization.id)).toEqual([])
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT 1 FROM post_snapshots WHERE post_id = ${post.id}`).toEqual([])
      }))

    it.scoped("a provider that refuses the read: 409 with its reason, nothing charged or stored", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(3)
        const post = yield* team.publish("Hello")
        team.mastodon.revokeToken()
        const refused = yield* team.call("POST", `/posts/${post.id}/analytics/refresh`)
        expect(refused.status).toBe(409)
        expect(refused.body).toEqual({
          _tag: "Conflict",
          reason: "analytics_read_refused",
          message: `The mastodon account ${team.toot.id} could not be read: mastodon auth (401): The access token is invalid`
        })
        expect(yield* team.credit).toEqual({ balance: 2, reserved: 0, available: 2 })
        expect(yield* analyticsLedgerOf(team.organization.id)).toEqual([])
      }))

    it.scoped("a draft has no targets to read; another organization, or a post of none, is 404", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(3)
        const post = yield* team.publish("Hello")
        const draft = yield* team.draft("Not yet")
        expect(yield* team.client.getPostAnalytics({ urlParams: {}, path: { teamId: team.teamId, postId: draft.id as PostId } }))
          .toEqual({ postId: draft.id, targets: [] })
        const free = yield* team.call("POST", `/posts/${draft.id}/analytics/refresh`)
        expect(free).toMatchObject({ status: 200, body: { postId: draft.id, targets: [] } })

        const elsewhere = yield* publishingTeam(100)
        const stranger = yield* signUp()
        for (const [method, suffix] of [["GET", ""], ["GET", "/refresh/estimate"], ["POST", "/refresh"]] as const) {
          const theirs = yield* elsewhere.call(method, `/posts/${post.id}/analytics${suffix}`)
          expect(theirs.status, `${method} ${suffix}`).toBe(404)
          expect(theirs.body).toEqual({ _tag: "NotFound", message: `Post ${post.id} not found` })
          const outsider = yield* raw({ method, path: `/v1/teams/${team.team.id}/posts/${post.id}/analytics${suffix}`, token: stranger.token })
          expect(outsider.status, `${method} ${suffix}`).toBe(404)
        }
        const missing = randomUUID()
        expect((yield* team.call("GET", `/posts/${missing}/analytics`)).body)
          .toEqual({ _tag: "NotFound", message: `Post ${missing} not found` })
        expect((yield* team.call("GET", `/posts/not-a-uuid/analytics`)).status).toBe(400)
        expect(yield* elsewhere.credit).toEqual({ balance: 100, reserved: 0, available: 100 })
        expect(yield* team.credit).toEqual({ balance: 2, reserved: 0, available: 2 })
      }))
  })

  describe("account analytics", () => {
    it.scoped("counts over time: none at first, a paid refresh reads them now; a webhook has none; others' 404", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(2)
        yield* team.publish("Hello")
        const path = { teamId: team.teamId, socialAccountId: team.toot.id as SocialAccountId }
        expect(yield* team.client.getAccountAnalytics({ urlParams: {}, path }))
          .toEqual({ socialAccountId: team.toot.id, provider: "mastodon", latest: null, series: [] })
        expect(yield* team.client.estimateAccountAnalyticsRefresh({ path })).toEqual({
          total: 1,
          perAccount: [{ socialAccountId: team.toot.id, credits: 1 }],
          available: 1,
          sufficient: true
        })
        team.mastodon.setAccountCounts({ followers_count: 12, following_count: 3 })
        const refreshed = yield* team.client.refreshAccountAnalytics({ path, headers: {} })
        const snapshot = { takenAt: expect.any(String), followers: 12, following: 3, posts: 1 }
        expect(refreshed).toEqual({ socialAccountId: team.toot.id, provider: "mastodon", latest: snapshot, series: [snapshot] })
        expect(yield* analyticsLedgerOf(team.organization.id)).toEqual([{ amount: 1, postId: null, socialAccountId: team.toot.id }])
        const sql = yield* SqlClient.SqlClient
        expect(yield* sql`SELECT jsonb_typeof(raw) AS kind FROM account_snapshots WHERE social_account_id = ${team.toot.id}`)
          .toEqual([{ kind: "object" }])
        const short = yield* team.call("POST", `/social-accounts/${team.toot.id}/analytics/refresh`)
        expect(short.body).toEqual({
          _tag: "PaymentRequired",
          reason: "insufficient_credits",
          message: "Reading analytics needs 1 credit and the organization has 0 available. " +
            `Billing is off on this server, so an operator adds credits with \`pnpm admin credits grant --organization ${team.organization.id} --amount 1\``
        })

        const webhook = yield* team.call("POST", `/social-accounts/${team.hook.id}/analytics/refresh`)
        // A webhook has nothing to read: free, as the estimate says and as for a post published only to webhooks.
        expect(webhook).toMatchObject({ status: 200, body: { socialAccountId: team.hook.id, provider: "webhook", latest: null, series: [] } })
        expect(yield* analyticsLedgerOf(team.organization.id)).toHaveLength(1)
        expect((yield* team.call("GET", `/social-accounts/${team.hook.id}/analytics/refresh/estimate`)).body)
          .toMatchObject({ total: 0, perAccount: [{ socialAccountId: team.hook.id, credits: 0 }] })

        const elsewhere = yield* publishingTeam(100)
        for (const [method, suffix] of [["GET", ""], ["GET", "/refresh/estimate"], ["POST", "/refresh"]] as const) {
          const theirs = yield* elsewhere.call(method, `/social-accounts/${team.toot.id}/analytics${suffix}`)
          expect(theirs.body, `${method} ${suffix}`).toEqual({ _tag: "NotFound", message: `Social account ${team.toot.id} not found` })
        }
        expect(yield* elsewhere.credit).toEqual({ balance: 100, reserved: 0, available: 100 })
      }))
  })

  describe("series windows", () => {
    it.scoped("a series holds the newest `limit` snapshots taken before `before`, oldest first; latest is the newest; limits at and past their bounds", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(3)
        const post = yield* team.publish("Hello")
        const sql = yield* SqlClient.SqlClient
        const times = ["2026-01-01T00:00:00.000Z", "2026-01-02T00:00:00.000Z", "2026-01-03T00:00:00.000Z"]
        for (const [i, at] of times.entries()) {
          yield* sql`INSERT INTO post_snapshots (post_id, social_account_id, taken_at, likes, link_clicks, raw)
            VALUES (${post.id}, ${team.toot.id}, ${at}, ${i}, 0, '{}')`
          yield* sql`INSERT INTO account_snapshots (social_account_id, taken_at, followers, raw)
            VALUES (${team.toot.id}, ${at}, ${i}, '{}')`
        }
        const postSeries = (urlParams: { limit?: number; before?: string }) =>
          Effect.map(
            team.client.getPostAnalytics({ urlParams, path: { teamId: team.teamId, postId: post.id } }),
            (analytics) => mastodonTarget(analytics)
          )
        const accountSeries = (urlParams: { limit?: number; before?: string }) =>
          team.client.getAccountAnalytics({ urlParams, path: { teamId: team.teamId, socialAccountId: team.toot.id as SocialAccountId } })
        const takenAt = (series: ReadonlyArray<{ takenAt: string }>) => series.map((snapshot) => snapshot.takenAt)

        expect(takenAt((yield* postSeries({})).series)).toEqual(times)
        const newestTwo = yield* postSeries({ limit: 2 })
        expect(takenAt(newestTwo.series)).toEqual(times.slice(1))
        expect(newestTwo.latest).toMatchObject({ takenAt: times[2], likes: 2 })
        const before = yield* postSeries({ limit: 1, before: "2026-01-03T01:00:00+01:00" })
        expect(takenAt(before.series)).toEqual([times[1]])
        // The latest stays the newest whatever the window.
        expect(before.latest).toMatchObject({ takenAt: times[2] })
        expect(takenAt((yield* postSeries({ limit: 1000 })).series)).toEqual(times)

        expect(takenAt((yield* accountSeries({ limit: 2 })).series)).toEqual(times.slice(1))
        const accountBefore = yield* accountSeries({ before: times[1]!.replace("Z", "+00:00") })
        expect(takenAt(accountBefore.series)).toEqual([times[0]])
        expect(accountBefore.latest).toMatchObject({ takenAt: times[2], followers: 2 })
        expect(takenAt((yield* accountSeries({ limit: 1 })).series)).toEqual([times[2]])

        for (const path of [`/posts/${post.id}/analytics`, `/social-accounts/${team.toot.id}/analytics`]) {
          for (const query of ["limit=0", "limit=1001", "limit=x", "before=yesterday"]) {
            const refused = yield* team.call("GET", `${path}?${query}`)
            expect(refused.status, `${path}?${query}`).toBe(400)
            expect(refused.body._tag).toBe("HttpApiDecodeError")
            expect(refused.body.message).toContain(query.startsWith("limit") ? "limit" : "before")
          }
        }
      }))
  })

  describe("scheduled snapshots", () => {
    it.scoped("a removed account's targets are read no more; their snapshots stay, without a provider", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(5)
        const post = yield* team.publish("Hello")
        const path = { teamId: team.teamId, postId: post.id }
        yield* team.client.refreshPostAnalytics({ path, headers: {} })
        expect((yield* team.call("DELETE", `/social-accounts/${team.toot.id}`)).status).toBe(200)
        const reads = team.mastodon.requests.length
        const snapshots = yield* AnalyticsSnapshots
        yield* Effect.zipRight(
          TestClock.setTime(Date.now() + snapshotOffsetsSeconds[0]! * 1000 + 1000),
          snapshots.snapshotDue
        ).pipe(Effect.provide(TestContext.TestContext))
        expect(team.mastodon.requests.length).toBe(reads)
        const target = (yield* team.client.getPostAnalytics({ urlParams: {}, path })).targets.find((t) => t.socialAccountId === team.toot.id)
        expect(target).toMatchObject({ provider: null, externalId: post.statusId, latest: { likes: 0 } })
        expect(target!.series).toHaveLength(1)
        const sql = yield* SqlClient.SqlClient
        const [due] = yield* sql<{ due: Date | null }>`SELECT analytics_due_at AS due FROM post_targets
          WHERE post_id = ${post.id} AND social_account_id = ${team.toot.id}`
        expect(due!.due).toBeNull()
        expect((yield* team.call("GET", `/social-accounts/${team.toot.id}/analytics`)).status).toBe(404)
      }))

    it.scoped("a read that outlasts its lease: the process that claimed the target again stores it, the first stores nothing", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(5)
        const post = yield* team.publish("Hello")
        const snapshots = yield* AnalyticsSnapshots
        const statusReads = () => team.mastodon.requests.filter(({ path }) => path.startsWith("/api/v1/statuses?"))
        const due = Date.now() + snapshotOffsetsSeconds[0]! * 1000 + 1000
        // Each run on a clock of its own, as two processes: the first's read hangs at the instance (a slow fake).
        const release = team.mastodon.holdNext()
        const first = yield* Effect.fork(
          Effect.zipRight(TestClock.setTime(due), snapshots.snapshotDue).pipe(Effect.provide(TestContext.TestContext))
        )
        yield* eventually(Effect.sync(() => statusReads().length), (reads) => reads === 1)
        team.mastodon.setCounts(post.statusId, { favourites_count: 4 })
        // Past the first one's lease, another process claims the target, reads and stores it.
        yield* Effect.zipRight(TestClock.setTime(due + 400_000), snapshots.snapshotDue).pipe(Effect.provide(TestContext.TestContext))
        release()
        yield* Fiber.join(first)
        expect(statusReads()).toHaveLength(2)
        const series = mastodonTarget(yield* team.client.getPostAnalytics({ urlParams: {}, path: { teamId: team.teamId, postId: post.id } })).series
        expect(series).toEqual([expect.objectContaining({ likes: 4 })])
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ dueAt: Date }>`SELECT analytics_due_at AS "dueAt" FROM post_targets
          WHERE post_id = ${post.id} AND social_account_id = ${team.toot.id}`
        // Its next read, an hour after publishing, as the second process set it.
        expect(row!.dueAt.getTime()).toBeGreaterThan(due + 400_000)
      }))

    it.scoped("a read the provider cannot answer now is tried again five minutes later rather than at the next point", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(5)
        const post = yield* team.publish("Hello")
        const snapshots = yield* AnalyticsSnapshots
        const sql = yield* SqlClient.SqlClient
        const dueAt = Effect.map(
          sql<{ dueAt: Date }>`SELECT analytics_due_at AS "dueAt" FROM post_targets
            WHERE post_id = ${post.id} AND social_account_id = ${team.toot.id}`,
          ([row]) => row!.dueAt.getTime()
        )
        const series = Effect.map(
          team.client.getPostAnalytics({ urlParams: {}, path: { teamId: team.teamId, postId: post.id } }),
          (analytics) => mastodonTarget(analytics).series
        )
        const runAt = (at: number) =>
          Effect.zipRight(TestClock.setTime(at), snapshots.snapshotDue).pipe(Effect.provide(TestContext.TestContext))
        const due = Date.now() + snapshotOffsetsSeconds[0]! * 1000 + 1000
        team.mastodon.answerNext({ status: 503, body: { error: "Down for maintenance" } })
        yield* runAt(due)
        expect(yield* series).toEqual([])
        expect(yield* dueAt).toBe(due + 300_000)
        yield* runAt(due + 300_000)
        expect(yield* series).toHaveLength(1)
      }))

    it.effect("such retries last an hour after the missed point at most and never pass the next point", () =>
      Effect.sync(() => {
        const published = Date.UTC(2026, 0, 1)
        const at = (minutes: number) => new Date(published + minutes * 60_000)
        const retryOf = (minutes: number) => retryAt(new Date(published), at(minutes))?.getTime()
        // After the 7-day point: every five minutes for its hour, then the 30-day point.
        expect(retryOf(7 * 1440 + 10)).toBe(at(7 * 1440 + 15).getTime())
        expect(retryOf(7 * 1440 + 55)).toBe(at(7 * 1440 + 60).getTime())
        expect(retryOf(7 * 1440 + 56)).toBe(at(30 * 1440).getTime())
        // After the 15-minute point: no retry at or past the 1-hour point.
        expect(retryOf(54)).toBe(at(59).getTime())
        expect(retryOf(56)).toBe(at(60).getTime())
        // After the last point: five minutes later within the hour, then never.
        expect(retryOf(30 * 1440 + 30)).toBe(at(30 * 1440 + 35).getTime())
        expect(retryOf(30 * 1440 + 59)).toBeUndefined()
      }))

    it.scoped("follow the decaying schedule on a compressed clock, one batched read per account, then never; accounts daily", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(10)
        const first = yield* team.publish("First")
        const second = yield* team.publish("Second")
        const snapshots = yield* AnalyticsSnapshots
        const seriesOf = (postId: PostId) =>
          Effect.map(team.client.getPostAnalytics({ urlParams: {}, path: { teamId: team.teamId, postId } }), (analytics) => mastodonTarget(analytics).series)
        const statusReads = () => team.mastodon.requests.filter(({ path }) => path.startsWith("/api/v1/statuses?"))
        const sql = yield* SqlClient.SqlClient
        const webhookTargetsDue = Effect.map(
          sql<{ due: number }>`SELECT count(*)::int AS due FROM post_targets
            WHERE social_account_id = ${team.hook.id} AND analytics_due_at IS NOT NULL`,
          ([row]) => row!.due
        )
        const balance = (yield* team.credit).balance

        yield* Effect.gen(function*() {
          const start = Date.now()
          const at = (seconds: number) => TestClock.setTime(start + seconds * 1000 + 1000)
          yield* TestClock.setTime(start)
          yield* snapshots.snapshotDue
          expect(yield* seriesOf(first.id)).toEqual([])
          // A webhook has nothing to read: its targets were never due.
          expect(yield* webhookTargetsDue).toBe(0)

          for (const [i, offset] of snapshotOffsetsSeconds.entries()) {
            team.mastodon.setCounts(first.statusId, { favourites_count: i + 1 })
            yield* at(offset)
            yield* snapshots.snapshotDue
            const series = yield* seriesOf(first.id)
            expect(series, `after ${offset} s`).toHaveLength(i + 1)
            expect(series.at(-1)).toMatchObject({ likes: i + 1, reposts: 0, views: null, linkClicks: 0 })
            expect(yield* seriesOf(second.id)).toHaveLength(i + 1)
            // Both posts of the account in one call; the webhook is never asked.
            expect(statusReads()).toHaveLength(i + 1)
            expect(decodeURIComponent(statusReads().at(-1)!.path)).toBe(
              `/api/v1/statuses?id[]=${first.statusId}&id[]=${second.statusId}`
            )
            // A second run at the same time finds nothing due.
            yield* snapshots.snapshotDue
            expect(statusReads()).toHaveLength(i + 1)
          }
          expect(yield* webhookTargetsDue).toBe(0)
          yield* at(365 * 86_400)
          yield* snapshots.snapshotDue
          expect(yield* seriesOf(first.id)).toHaveLength(snapshotOffsetsSeconds.length)
          expect(statusReads()).toHaveLength(snapshotOffsetsSeconds.length)
        }).pipe(Effect.provide(TestContext.TestContext))

        // The accounts' daily counts were read along the way (a day after connecting, then daily), free.
        const counts = yield* team.client.getAccountAnalytics({
          urlParams: {},
          path: { teamId: team.teamId, socialAccountId: team.toot.id as SocialAccountId }
        })
        expect(counts.series.length).toBeGreaterThanOrEqual(2)
        expect(counts.latest).toMatchObject({ followers: 0, following: 0, posts: 2 })
        const hook = yield* team.client.getAccountAnalytics({
          urlParams: {},
          path: { teamId: team.teamId, socialAccountId: team.hook.id as SocialAccountId }
        })
        expect(hook).toMatchObject({ provider: "webhook", latest: null, series: [] })
        expect((yield* team.credit).balance).toBe(balance)
      }))
  })
})

// A day's budget of two Mastodon calls per account, and a live read of a Mastodon account at 2 credits.
const TightBudgets = Layer.setConfigProvider(
  ConfigProvider.fromMap(
    new Map([
      ["PROVIDER_BUDGETS", JSON.stringify({ mastodon: [{ limit: 2, cost: 1, seconds: 86_400 }] })],
      ["CREDIT_COSTS", JSON.stringify({ analytics: { mastodon: 2 } })],
      // So that a post can be scheduled a second ahead and the dispatcher takes it soon after.
      ["SCHEDULE_MIN_LEAD_SECONDS", "1"],
      ["SCHEDULER_POLL_MS", "100"]
    ])
  ).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
)

layer(Layer.provideMerge(Snapshots, TestServer).pipe(Layer.provide(TightBudgets)), { excludeTestServices: true })(
  "analytics within PROVIDER_BUDGETS and CREDIT_COSTS",
  (it) => {
    it.scoped("reads count with publishes against the account's budget: a refresh over it is 429, a scheduled read waits", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(10)
        const post = yield* team.publish("Hello")
        const path = { teamId: team.teamId, postId: post.id }
        // Publishing still costs the default 1; a live read of the Mastodon account 2.
        expect(yield* team.credit).toEqual({ balance: 9, reserved: 0, available: 9 })
        expect(yield* team.client.estimatePostAnalyticsRefresh({ path })).toMatchObject({ total: 2, sufficient: true })
        expect(mastodonTarget(yield* team.client.refreshPostAnalytics({ path, headers: {} })).series).toHaveLength(1)
        expect(yield* team.credit).toEqual({ balance: 7, reserved: 0, available: 7 })
        expect(yield* analyticsLedgerOf(team.organization.id)).toEqual([{ amount: 2, postId: post.id, socialAccountId: team.toot.id }])

        // The publish and the read used the day's two calls.
        const reads = team.mastodon.requests.length
        const over = yield* team.call("POST", `/posts/${post.id}/analytics/refresh`)
        expect(over.status).toBe(429)
        expect(over.body).toEqual({
          _tag: "TooManyRequests",
          message: `The mastodon account ${team.toot.id} has used the calls its provider allows for now: try again later`
        })
        expect(yield* team.credit).toEqual({ balance: 7, reserved: 0, available: 7 })
        expect(team.mastodon.requests.length).toBe(reads)
        // A 429 is not kept for its Idempotency-Key: the same key, tried again later, runs again rather than replaying it.
        const keyed = () => team.call("POST", `/posts/${post.id}/analytics/refresh`, undefined, { "idempotency-key": "over-budget" })
        expect((yield* keyed()).status).toBe(429)
        const again = yield* keyed()
        expect(again.status).toBe(429)
        expect(again.headers.get("idempotent-replayed")).toBeNull()

        const sql = yield* SqlClient.SqlClient
        const dueAt = Effect.map(
          sql<{ dueAt: Date }>`SELECT analytics_due_at AS "dueAt" FROM post_targets
            WHERE post_id = ${post.id} AND social_account_id = ${team.toot.id}`,
          ([row]) => row!.dueAt.getTime()
        )
        const snapshots = yield* AnalyticsSnapshots
        const now = Date.now() + snapshotOffsetsSeconds[0]! * 1000 + 1000
        yield* Effect.zipRight(TestClock.setTime(now), snapshots.snapshotDue).pipe(Effect.provide(TestContext.TestContext))
        expect(team.mastodon.requests.length).toBe(reads)
        expect(mastodonTarget(yield* team.client.getPostAnalytics({ urlParams: {}, path })).series).toHaveLength(1)
        // Tried again five minutes later.
        expect(yield* dueAt).toBe(now + 300_000)
      }))

    it.scoped("a scheduled post counts the analytics reads too: after a publish and a refresh it waits for the day's window", () =>
      Effect.gen(function*() {
        const team = yield* publishedToMastodonAndWebhook(10)
        const post = yield* team.publish("Hello")
        yield* team.client.refreshPostAnalytics({ path: { teamId: team.teamId, postId: post.id }, headers: {} })
        const sql = yield* SqlClient.SqlClient
        const [{ firstCall }] = yield* sql<{ firstCall: Date }>`SELECT min(started_at) AS "firstCall" FROM publish_attempts
          WHERE social_account_id = ${team.toot.id}`

        // The publish and the read used the day's two calls: the next send waits for the publish to age out.
        const later = yield* team.draft("Later")
        const { answer } = yield* team.scheduleSoon(later.id, [team.toot.id], 3)
        expect(answer.status).toBe(200)
        const held = yield* eventually(
          Effect.map(team.call("GET", `/posts/${later.id}`), (response) => response.body),
          (found) => found.waitingUntil !== null
        )
        expect(held).toMatchObject({ status: "scheduled", waitingUntil: expect.any(String) })
        expect(Date.parse(held.waitingUntil)).toBeGreaterThanOrEqual(firstCall.getTime() + 86_400_000)
        expect(team.mastodon.statuses.map((status) => status.text)).toEqual(["Hello"])
      }))
  }
)
