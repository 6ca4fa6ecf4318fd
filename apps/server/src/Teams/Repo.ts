import { SqlClient, SqlSchema, type Statement } from "@effect/sql"
import { type CreateTeam, type OrganizationId, Team, type TeamId, type UpdateTeam, type UserId } from "@postline/domain"
import { Effect, Schema } from "effect"
import { keyset, type PageRequest, type SortColumns, sortColumnsOf, toPage } from "../Pagination/Keyset.js"
import { planDefaults } from "./PlanDefaults.js"

const teamSortColumns = sortColumnsOf("t")
const accessSortColumns: SortColumns = { ...sortColumnsOf("a"), id: "a.team_id" }

export class TeamsRepo extends Effect.Service<TeamsRepo>()("TeamsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // Columns in the exact shape of the contract's Team; linkTrackingDefault is
    // the team's override, else the plan default.
    const iso = (column: string) => sql.literal(`to_char(t.${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`)
    const columns = sql`t.id, t.organization_id, t.name, t.website,
      coalesce(t.link_tracking_override, ${planDefaults.linkTracking}) AS link_tracking_default, t.timezone,
      ${iso("created_at")} AS created_at, ${iso("updated_at")} AS updated_at`

    const decodeTeams = Schema.decodeUnknown(Schema.Array(Team))

    /**
     * One page of teams from `source` (rows aliased `a`, sorted by `sortColumns`,
     * joined to their team by `a.team_id` or being the team themselves).
     */
    const listFrom = (source: Statement.Fragment, sortColumns: SortColumns, request: PageRequest) =>
      Effect.gen(function*() {
        const page = keyset(sql, sortColumns, request)
        const [rows, [{ count }]] = yield* Effect.all([
          sql`SELECT ${columns} FROM ${source} AND ${page.where}
              ORDER BY ${page.orderBy} LIMIT ${page.limit}`.pipe(Effect.flatMap(decodeTeams)),
          sql<{ count: number }>`SELECT count(*)::int AS count FROM ${source}`
        ], { concurrency: "unbounded" })
        return yield* toPage({
          request,
          rows,
          total: count,
          existsBeyond: (side, boundary) =>
            sql<{ exists: boolean }>`SELECT EXISTS (SELECT 1 FROM ${source}
              AND ${page.beyond(boundary, side === "after")}) AS exists`.pipe(Effect.map(([row]) => row.exists))
        })
      }).pipe(Effect.orDie)

    /** The teams of one organization, by its own indexes. */
    const listOfOrganization = (organizationId: OrganizationId, request: PageRequest) =>
      listFrom(sql`teams t WHERE t.organization_id = ${organizationId}`, teamSortColumns, request)

    /** The teams of every organization the user belongs to, through their access rows. */
    const listForUser = (userId: UserId, request: PageRequest) =>
      listFrom(sql`team_access a JOIN teams t ON t.id = a.team_id WHERE a.user_id = ${userId}`, accessSortColumns, request)

    const selectById = (id: string) => sql`SELECT ${columns} FROM teams t WHERE t.id = ${id}`
    const findById = SqlSchema.findOne({ Request: Schema.String, Result: Team, execute: selectById })
    const getById = SqlSchema.single({ Request: Schema.String, Result: Team, execute: selectById })

    const create = (input: CreateTeam) =>
      Effect.gen(function*() {
        const [{ id }] = yield* sql<{ id: string }>`
          INSERT INTO teams (organization_id, name, website, link_tracking_override, timezone)
          VALUES (${input.organizationId}, ${input.name}, ${input.website ?? null},
                  ${input.linkTrackingDefault ?? null}, ${input.timezone ?? null})
          RETURNING id`
        return yield* getById(id)
      }).pipe(Effect.orDie)

    const update = (id: TeamId, changes: UpdateTeam) =>
      Effect.gen(function*() {
        const assignments = [
          changes.name !== undefined ? sql`name = ${changes.name}` : undefined,
          changes.website !== undefined ? sql`website = ${changes.website}` : undefined,
          changes.linkTrackingDefault !== undefined
            ? sql`link_tracking_override = ${changes.linkTrackingDefault}`
            : undefined,
          changes.timezone !== undefined ? sql`timezone = ${changes.timezone}` : undefined
        ].filter((fragment) => fragment !== undefined)
        if (assignments.length > 0) {
          yield* sql`UPDATE teams SET ${sql.csv(assignments)}, updated_at = now() WHERE id = ${id}`
        }
        return yield* getById(id)
      }).pipe(Effect.orDie)

    return {
      listForUser,
      listOfOrganization,
      findById: (id: TeamId) => findById(id).pipe(Effect.orDie),
      create,
      update
    }
  })
}) {}
