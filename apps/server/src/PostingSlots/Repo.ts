import { SqlClient } from "@effect/sql"
import type { PostingSlot, TeamId } from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc, selectFields } from "../Database/Columns.js"

/** A team's slots and the timezone they are wall-clock times in. */
export interface TeamSlots {
  readonly timeZone: string
  readonly slots: ReadonlyArray<PostingSlot>
}

export class PostingSlotsRepo extends Effect.Service<PostingSlotsRepo>()("PostingSlotsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const columns = selectFields<PostingSlot>(sql, { weekday: "s.weekday", time: "to_char(s.time_of_day, 'HH24:MI')" })

    const slotsOf = (teamId: TeamId) =>
      sql<PostingSlot>`SELECT ${columns} FROM posting_slots s WHERE s.team_id = ${teamId}
        ORDER BY s.weekday, s.time_of_day`

    // Replacing the slots and choosing one lock the team's row, so that they take turns: two posts
    // scheduled for the next slot at once get two slots, each from a whole list.
    const lockTeam = (teamId: TeamId) =>
      sql<{ readonly timezone: string | null }>`SELECT timezone FROM teams WHERE id = ${teamId} FOR NO KEY UPDATE`

    const list = (teamId: TeamId) => slotsOf(teamId).pipe(Effect.orDie, policyRequire("PostingSlots", "read"))

    /** Replaces the team's slots with these; answers them in order. */
    const replace = (teamId: TeamId, slots: ReadonlyArray<PostingSlot>) =>
      Effect.gen(function*() {
        yield* lockTeam(teamId)
        yield* sql`DELETE FROM posting_slots WHERE team_id = ${teamId}`
        if (slots.length > 0) {
          yield* sql`INSERT INTO posting_slots (team_id, weekday, time_of_day)
            SELECT ${teamId}, s.weekday, s.time::time
            FROM jsonb_to_recordset(${JSON.stringify(slots)}::jsonb) AS s (weekday smallint, time text)`
        }
        return yield* slotsOf(teamId)
      }).pipe(Effect.orDie, policyRequire("PostingSlots", "manage"))

    /**
     * For scheduling a post of the team (which is publishing it): the team's slots and timezone (UTC when it
     * has none), with the team locked until the transaction ends; none for a team that does not exist.
     */
    const forScheduling = (teamId: TeamId) =>
      Effect.gen(function*() {
        const [team] = yield* lockTeam(teamId)
        if (team === undefined) return Option.none<TeamSlots>()
        return Option.some<TeamSlots>({ timeZone: team.timezone ?? "UTC", slots: yield* slotsOf(teamId) })
      }).pipe(Effect.orDie, policyRequire("Post", "publish"))

    /** Which of these instants (milliseconds) a scheduled post of the team holds. */
    const takenAmong = (teamId: TeamId, instants: ReadonlyArray<number>) =>
      sql<{ readonly at: string }>`SELECT ${sql.literal(isoUtc("p.scheduled_at"))} AS at FROM posts p
        WHERE p.team_id = ${teamId} AND p.status = 'scheduled' AND p.scheduled_at IN (
          SELECT value::timestamptz FROM jsonb_array_elements_text(${
        JSON.stringify(instants.map((instant) => new Date(instant).toISOString()))
      }::jsonb))`.pipe(
        Effect.map((rows) => new Set(rows.map((row) => Date.parse(row.at)))),
        Effect.orDie,
        policyRequire("Post", "publish")
      )

    return { list, replace, forScheduling, takenAmong } as const
  })
}) {}
