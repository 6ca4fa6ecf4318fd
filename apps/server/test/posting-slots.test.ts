import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Caller, CurrentCaller, type TeamId, type User } from "@postline/domain"
import { Effect, Layer, Option } from "effect"
import { randomUUID } from "node:crypto"
import { authorize } from "../src/Access/Authorization.js"
import { transactionally } from "../src/Database/Transaction.js"
import { PostingSlots } from "../src/PostingSlots/Service.js"
import { PostsPolicy } from "../src/Posts/Policy.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

/** An admin's organization and a team of it in `timezone`, with calls on its posting slots. */
const slotsTeam = (timezone: string | null = null) =>
  Effect.gen(function*() {
    const admin = yield* signUp("Ada Admin")
    const organization = yield* admin.client.organizations.createOrganization({ payload: { name: "Acme" } })
    const team = yield* admin.client.teams.createTeam({ payload: { organizationId: organization.id, name: "Social", timezone } })
    const path = `/v1/teams/${team.id}/posting-slots`
    const get = (token = admin.token) => raw({ method: "GET", path, token })
    const put = (json: unknown, token = admin.token) => raw({ method: "PUT", path, token, json })
    return { admin, organization, team, path, get, put }
  })

const join = (organizationId: string, userId: string, role: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`INSERT INTO memberships (user_id, organization_id, role) VALUES (${userId}, ${organizationId}, ${role})`)

/** A post of the team at `at`, in `status`, written directly as the scheduler would leave it. */
const insertPost = (teamId: string, at: string, status = "scheduled") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ id: string }>`INSERT INTO posts (team_id, content, status, scheduled_at)
      VALUES (${teamId}, 'Scheduled', ${status}, ${at}::timestamptz) RETURNING id`.pipe(Effect.map(([row]) => row.id)))

const ServiceLayer = Layer.merge(PostingSlots.Default, PostsPolicy.Default)

/** `nextFreeSlot` as the scheduler calls it: authorized as publishing, for the admin. */
const nextFreeSlot = (caller: { readonly user: User }, teamId: string, now: string) =>
  Effect.gen(function*() {
    const slots = yield* PostingSlots
    const policy = yield* PostsPolicy
    const next = yield* authorize(policy.canPublish(teamId as TeamId, { lock: false }))(() =>
      slots.nextFreeSlot(teamId as TeamId, new Date(now))
    )
    return Option.map(next, (date) => date.toISOString())
  }).pipe(Effect.provideService(CurrentCaller, Caller.User({ user: caller.user })), Effect.provide(ServiceLayer))

layer(TestServer, { excludeTestServices: true })("posting slots", (it) => {
  describe("get and replace", () => {
    it.effect("round trip: a team starts with none; PUT replaces the whole list, answered by weekday then time", () =>
      Effect.gen(function*() {
        const { get, put } = yield* slotsTeam("Europe/Paris")
        expect(yield* get()).toMatchObject({ status: 200, body: { slots: [] } })
        const slots = [
          { weekday: 7, time: "18:00" },
          { weekday: 1, time: "09:30" },
          { weekday: 1, time: "08:05" },
          { weekday: 3, time: "00:00" },
          { weekday: 3, time: "23:59" }
        ]
        const replaced = yield* put({ slots })
        expect(replaced.status, JSON.stringify(replaced.body)).toBe(200)
        const sorted = [slots[2], slots[1], slots[3], slots[4], slots[0]]
        expect(replaced.body).toEqual({ slots: sorted })
        expect((yield* get()).body).toEqual({ slots: sorted })
        // The whole list is replaced, not merged.
        expect((yield* put({ slots: [{ weekday: 2, time: "12:00" }] })).body).toEqual({ slots: [{ weekday: 2, time: "12:00" }] })
        expect((yield* get()).body).toEqual({ slots: [{ weekday: 2, time: "12:00" }] })
        expect((yield* put({ slots: [] })).body).toEqual({ slots: [] })
        expect((yield* get()).body).toEqual({ slots: [] })
      }))

    it.effect("0 to 50 distinct slots, weekdays 1 to 7, times HH:MM from 00:00 to 23:59; anything else is 400 and changes nothing", () =>
      Effect.gen(function*() {
        const { get, put } = yield* slotsTeam()
        const fifty = Array.from({ length: 50 }, (_, index) => ({
          weekday: (index % 7) + 1,
          time: `${String(index % 24).padStart(2, "0")}:${String(index).padStart(2, "0")}`
        }))
        const accepted = yield* put({ slots: fifty })
        expect(accepted.status, JSON.stringify(accepted.body)).toBe(200)
        expect(accepted.body.slots).toHaveLength(50)
        const kept = (yield* get()).body

        const issuesOf = (json: unknown) =>
          Effect.map(put(json), (response) => {
            expect(response.status, JSON.stringify(json).slice(0, 80)).toBe(400)
            expect(response.body._tag).toBe("HttpApiDecodeError")
            return response.body.issues
          })
        const slotsIssue = [{ path: ["slots"], message: "must be at most 50 distinct slots" }]
        expect(yield* issuesOf({ slots: [...fifty, { weekday: 7, time: "23:59" }] })).toEqual(slotsIssue)
        expect(yield* issuesOf({ slots: [{ weekday: 1, time: "09:00" }, { weekday: 1, time: "09:00" }] })).toEqual(slotsIssue)
        for (const weekday of [0, 8, 1.5, -1, "1", null]) {
          expect(yield* issuesOf({ slots: [{ weekday, time: "09:00" }] }), String(weekday)).toEqual([
            { path: ["slots", "0", "weekday"], message: "must be an integer from 1 (Monday) to 7 (Sunday)" }
          ])
        }
        for (const time of ["24:00", "7:5", "12:60", "07:05:00", " 07:05", "0705", "", 905]) {
          expect(yield* issuesOf({ slots: [{ weekday: 1, time: "09:00" }, { weekday: 1, time }] }), String(time)).toEqual([
            { path: ["slots", "1", "time"], message: "must be a time HH:MM from 00:00 to 23:59" }
          ])
        }
        expect((yield* issuesOf({ slots: [{ weekday: 1, time: "09:00", zone: "UTC" }] }))[0].path).toEqual(["slots", "0", "zone"])
        expect((yield* issuesOf({ slots: [], extra: true }))[0].path).toEqual(["extra"])
        expect((yield* issuesOf({}))[0].path).toEqual(["slots"])
        expect((yield* get()).body).toEqual(kept)
      }))

    it.effect("members read and may not replace (403); admins, owners and the organization's API keys replace; other teams are 404", () =>
      Effect.gen(function*() {
        const { admin, get, organization, put } = yield* slotsTeam()
        const member = yield* signUp("Mo Member")
        const owner = yield* signUp("Olga Owner")
        yield* join(organization.id, member.user.id, "member")
        yield* join(organization.id, owner.user.id, "owner")
        expect((yield* put({ slots: [{ weekday: 1, time: "09:00" }] })).status).toBe(200)

        expect(yield* get(member.token)).toMatchObject({ status: 200, body: { slots: [{ weekday: 1, time: "09:00" }] } })
        const refused = yield* put({ slots: [] }, member.token)
        expect(refused).toMatchObject({ status: 403, body: { _tag: "Forbidden" } })
        expect((yield* get()).body.slots).toHaveLength(1)

        expect((yield* put({ slots: [{ weekday: 2, time: "10:00" }] }, owner.token)).status).toBe(200)
        const key = yield* admin.client.apiKeys.createApiKey({ path: { organizationId: organization.id }, payload: { name: "CI" } })
        expect((yield* put({ slots: [{ weekday: 3, time: "11:00" }] }, key.key)).status).toBe(200)
        expect((yield* get(key.key)).body).toEqual({ slots: [{ weekday: 3, time: "11:00" }] })

        // Another organization's admin, and its API key, do not see this team at all.
        const elsewhere = yield* slotsTeam()
        const foreignKey = yield* elsewhere.admin.client.apiKeys.createApiKey({
          path: { organizationId: elsewhere.organization.id },
          payload: { name: "Other" }
        })
        for (const token of [elsewhere.admin.token, foreignKey.key]) {
          expect(yield* get(token)).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
          expect(yield* put({ slots: [] }, token)).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
        }
        expect((yield* raw({ method: "GET", path: `/v1/teams/${randomUUID()}/posting-slots`, token: admin.token })).status).toBe(404)
        expect((yield* get()).body).toEqual({ slots: [{ weekday: 3, time: "11:00" }] })
      }))

    it.effect("concurrent replacements leave one whole list, never a mix", () =>
      Effect.gen(function*() {
        const { get, put } = yield* slotsTeam()
        const lists = Array.from({ length: 8 }, (_, round) =>
          Array.from({ length: 5 }, (_, index) => ({ weekday: index + 1, time: `${String(round + 10)}:${String(index * 5).padStart(2, "0")}` })))
        const answers = yield* Effect.forEach(lists, (slots) => put({ slots }), { concurrency: "unbounded" })
        expect(answers.map((answer) => answer.status)).toEqual(lists.map(() => 200))
        for (const answer of answers) expect(lists).toContainEqual(answer.body.slots)
        expect(lists).toContainEqual((yield* get()).body.slots)
      }))
  })

  describe("the next free slot (for scheduling)", () => {
    it.effect("skips slots held by a scheduled post of the team, and only those; across daylight saving", () =>
      Effect.gen(function*() {
        const { admin, put, team } = yield* slotsTeam("Europe/Paris")
        const now = "2025-03-28T12:00:00.000Z" // a Friday
        expect(yield* nextFreeSlot(admin, team.id, now)).toEqual(Option.none())

        expect((yield* put({ slots: [{ weekday: 7, time: "02:30" }, { weekday: 1, time: "09:00" }] })).status).toBe(200)
        // Sunday 30 March 02:30 does not exist in Paris: the clock goes from 02:00 CET to 03:00 CEST.
        expect(yield* nextFreeSlot(admin, team.id, now)).toEqual(Option.some("2025-03-30T01:00:00.000Z"))
        yield* insertPost(team.id, "2025-03-30T01:00:00Z")
        // Monday 31 March 09:00 CEST.
        expect(yield* nextFreeSlot(admin, team.id, now)).toEqual(Option.some("2025-03-31T07:00:00.000Z"))

        // A draft, a post being published or another team's scheduled post at that instant holds nothing.
        yield* insertPost(team.id, "2025-03-31T07:00:00Z", "draft")
        yield* insertPost(team.id, "2025-03-31T07:00:00Z", "publishing")
        const other = yield* slotsTeam("Europe/Paris")
        yield* insertPost(other.team.id, "2025-03-31T07:00:00Z")
        expect(yield* nextFreeSlot(admin, team.id, now)).toEqual(Option.some("2025-03-31T07:00:00.000Z"))
        // A post a second off the slot does not hold it.
        yield* insertPost(team.id, "2025-03-31T07:00:01Z")
        expect(yield* nextFreeSlot(admin, team.id, now)).toEqual(Option.some("2025-03-31T07:00:00.000Z"))

        yield* insertPost(team.id, "2025-03-31T07:00:00Z")
        // Sunday 6 April 02:30 CEST.
        expect(yield* nextFreeSlot(admin, team.id, now)).toEqual(Option.some("2025-04-06T00:30:00.000Z"))
        // Strictly after now: at the slot's own instant, it is the following one.
        expect(yield* nextFreeSlot(admin, team.id, "2025-04-06T00:30:00.000Z")).toEqual(Option.some("2025-04-07T07:00:00.000Z"))
      }))

    it.effect("looks as far ahead as it must; a team without a timezone uses UTC", () =>
      Effect.gen(function*() {
        const { admin, put, team } = yield* slotsTeam()
        expect((yield* put({ slots: [{ weekday: 1, time: "09:00" }] })).status).toBe(200)
        const now = "2025-01-01T00:00:00.000Z"
        // Ten Mondays held, well beyond one round of the search.
        const mondays = Array.from({ length: 10 }, (_, week) => new Date(Date.UTC(2025, 0, 6 + week * 7, 9)).toISOString())
        for (const monday of mondays) yield* insertPost(team.id, monday)
        expect(yield* nextFreeSlot(admin, team.id, now)).toEqual(Option.some("2025-03-17T09:00:00.000Z"))
      }))

    it.effect("needs the caller to be allowed to publish the team's posts", () =>
      Effect.gen(function*() {
        const { put, team } = yield* slotsTeam()
        expect((yield* put({ slots: [{ weekday: 1, time: "09:00" }] })).status).toBe(200)
        const stranger = yield* signUp("Stranger")
        const refused = yield* Effect.flip(nextFreeSlot(stranger, team.id, "2025-01-01T00:00:00.000Z"))
        expect(refused._tag).toBe("NotFound")
        // A call that skips the check does not type-check.
        const unchecked = Effect.flatMap(PostingSlots, (slots) => slots.nextFreeSlot(team.id, new Date()))
        // @ts-expect-error Authorized<"Post", "publish"> is still required
        const bare: Effect.Effect<unknown, unknown, PostingSlots> = unchecked
        expect(Effect.isEffect(bare)).toBe(true)
      }))

    it.effect("two posts scheduled for the next slot at once get two slots", () =>
      Effect.gen(function*() {
        const { admin, put, team } = yield* slotsTeam("America/New_York")
        expect((yield* put({ slots: [{ weekday: 1, time: "09:00" }, { weekday: 3, time: "09:00" }, { weekday: 5, time: "09:00" }] })).status)
          .toBe(200)
        const drafts = yield* Effect.forEach([1, 2, 3, 4, 5, 6], () => insertPost(team.id, "2025-01-01T00:00:00Z", "draft"))
        const sql = yield* SqlClient.SqlClient
        // As the scheduler does: choose the slot and write it in one transaction, allowed to publish, locked.
        const schedule = (postId: string) =>
          Effect.gen(function*() {
            const slots = yield* PostingSlots
            const policy = yield* PostsPolicy
            return yield* authorize(policy.canPublish(team.id as TeamId, { lock: true }))(() =>
              Effect.gen(function*() {
                const slot = Option.getOrThrow(yield* slots.nextFreeSlot(team.id as TeamId, new Date("2025-01-01T00:00:00Z")))
                yield* sql`UPDATE posts SET status = 'scheduled', scheduled_at = ${slot.toISOString()}::timestamptz
                  WHERE id = ${postId}`
                return slot.toISOString()
              })
            ).pipe(transactionally)
          }).pipe(Effect.provideService(CurrentCaller, Caller.User({ user: admin.user })), Effect.provide(ServiceLayer))
        const chosen = yield* Effect.forEach(drafts, schedule, { concurrency: "unbounded" })
        expect([...chosen].sort()).toEqual([
          "2025-01-01T14:00:00.000Z",
          "2025-01-03T14:00:00.000Z",
          "2025-01-06T14:00:00.000Z",
          "2025-01-08T14:00:00.000Z",
          "2025-01-10T14:00:00.000Z",
          "2025-01-13T14:00:00.000Z"
        ])
      }))
  })
})
