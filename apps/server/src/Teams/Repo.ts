import { SqlClient } from "@effect/sql"
import type { CreateTeam, OrganizationId, Team, UpdateTeam, UserId } from "@postline/domain"
import { Effect } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc, selectFields } from "../Database/Columns.js"
import { type PageRequest, paginate, type SortColumns, sortColumnsOf } from "../Pagination/Keyset.js"
import { PlanDefaults } from "./PlanDefaults.js"

const teamSortColumns = sortColumnsOf("t")
/** A user's access rows carry their team's sort keys: a page is one index range scan. */
const accessSortColumns: SortColumns = { ...sortColumnsOf("a"), id: "a.team_id" }

export class TeamsRepo extends Effect.Service<TeamsRepo>()("TeamsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const planDefaults = yield* PlanDefaults

    // The exact JSON form of the contract's Team: rows are sent as they come.
    const columns = selectFields<Team>(sql, {
      id: "t.id",
      organizationId: "t.organization_id",
      name: "t.name",
      website: "t.website",
      // The team's override, else the plan default.
      linkTrackingDefault: sql`coalesce(t.link_tracking_override, ${planDefaults.linkTracking})`,
      timezone: "t.timezone",
      createdAt: isoUtc("t.created_at"),
      updatedAt: isoUtc("t.updated_at")
    })

    /** The teams of every organization the user belongs to, through their access rows. */
    const listForUser = (userId: UserId, request: PageRequest) =>
      paginate<Team>({
        sql,
        request,
        columns: accessSortColumns,
        idOf: (team) => team.id,
        select: columns,
        rowsFrom: sql`FROM team_access a JOIN teams t ON t.id = a.team_id WHERE a.user_id = ${userId}`,
        keysFrom: sql`FROM team_access a WHERE a.user_id = ${userId}`
      }).pipe(Effect.orDie, policyRequire("Team", "list"))

    /** The teams of one organization, by its own indexes. */
    const listOfOrganization = (organizationId: OrganizationId, request: PageRequest) =>
      paginate<Team>({
        sql,
        request,
        columns: teamSortColumns,
        idOf: (team) => team.id,
        select: columns,
        rowsFrom: sql`FROM teams t WHERE t.organization_id = ${organizationId}`
      }).pipe(Effect.orDie, policyRequire("Team", "list"))

    const create = (input: CreateTeam) =>
      sql<Team>`INSERT INTO teams AS t (organization_id, name, website, link_tracking_override, timezone)
        VALUES (${input.organizationId}, ${input.name}, ${input.website ?? null},
                ${input.linkTrackingDefault ?? null}, ${input.timezone ?? null})
        RETURNING ${columns}`.pipe(Effect.map(([team]) => team), Effect.orDie, policyRequire("Team", "create"))

    /** Applies the changes; with none, the team is returned as it is. */
    const update = (team: Team, changes: UpdateTeam) => {
      const assignments = [
        changes.name !== undefined ? sql`name = ${changes.name}` : undefined,
        changes.website !== undefined ? sql`website = ${changes.website}` : undefined,
        changes.linkTrackingDefault !== undefined ? sql`link_tracking_override = ${changes.linkTrackingDefault}` : undefined,
        changes.timezone !== undefined ? sql`timezone = ${changes.timezone}` : undefined
      ].filter((fragment) => fragment !== undefined)
      return (assignments.length === 0
        ? Effect.succeed(team)
        : sql<Team>`UPDATE teams t SET ${sql.csv(assignments)}, updated_at = now()
            WHERE t.id = ${team.id} RETURNING ${columns}`.pipe(Effect.map(([updated]) => updated), Effect.orDie))
        .pipe(policyRequire("Team", "manage"))
    }

    return {
      listForUser,
      listOfOrganization,
      create,
      update,
      /** The contract's JSON form of `teams t`, for other repositories' statements. */
      columns
    } as const
  }),
  dependencies: [PlanDefaults.Default]
}) {}
