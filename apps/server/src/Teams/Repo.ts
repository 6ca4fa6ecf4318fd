import { SqlClient } from "@effect/sql"
import type { CreateTeam, OrganizationId, Team, TeamId, UpdateTeam, UserId } from "@postline/domain"
import { Effect, Option } from "effect"
import type { Role } from "../Organizations/Repo.js"
import { isoUtc, selectFields } from "../Database/Columns.js"
import { type PageRequest, paginate, type SortColumns, sortColumnsOf } from "../Pagination/Keyset.js"
import { planDefaults } from "./PlanDefaults.js"

const teamSortColumns = sortColumnsOf("t")
/** A user's access rows carry their team's sort keys: a page is one index range scan. */
const accessSortColumns: SortColumns = { ...sortColumnsOf("a"), id: "a.team_id" }

export class TeamsRepo extends Effect.Service<TeamsRepo>()("TeamsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

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
      }).pipe(Effect.orDie)

    /** The teams of one organization, by its own indexes. */
    const listOfOrganization = (organizationId: OrganizationId, request: PageRequest) =>
      paginate<Team>({
        sql,
        request,
        columns: teamSortColumns,
        idOf: (team) => team.id,
        select: columns,
        rowsFrom: sql`FROM teams t WHERE t.organization_id = ${organizationId}`
      }).pipe(Effect.orDie)

    /** The team and the user's role in its organization (none for a non-member), in one statement. */
    const findWithRole = (teamId: TeamId, userId: UserId) =>
      sql<Team & { readonly role: Role | null }>`SELECT ${columns}, m.role FROM teams t
        LEFT JOIN memberships m ON m.organization_id = t.organization_id AND m.user_id = ${userId}
        WHERE t.id = ${teamId}`.pipe(
        Effect.map(([row]) => Option.map(Option.fromNullable(row), ({ role, ...team }) => ({ team, role }))),
        Effect.orDie
      )

    const find = (teamId: TeamId) =>
      sql<Team>`SELECT ${columns} FROM teams t WHERE t.id = ${teamId}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie
      )

    const create = (input: CreateTeam) =>
      sql<Team>`INSERT INTO teams AS t (organization_id, name, website, link_tracking_override, timezone)
        VALUES (${input.organizationId}, ${input.name}, ${input.website ?? null},
                ${input.linkTrackingDefault ?? null}, ${input.timezone ?? null})
        RETURNING ${columns}`.pipe(Effect.map(([team]) => team), Effect.orDie)

    /** Applies the changes; with none, the team is returned as it is. */
    const update = (team: Team, changes: UpdateTeam) => {
      const assignments = [
        changes.name !== undefined ? sql`name = ${changes.name}` : undefined,
        changes.website !== undefined ? sql`website = ${changes.website}` : undefined,
        changes.linkTrackingDefault !== undefined ? sql`link_tracking_override = ${changes.linkTrackingDefault}` : undefined,
        changes.timezone !== undefined ? sql`timezone = ${changes.timezone}` : undefined
      ].filter((fragment) => fragment !== undefined)
      if (assignments.length === 0) return Effect.succeed(team)
      return sql<Team>`UPDATE teams t SET ${sql.csv(assignments)}, updated_at = now()
        WHERE t.id = ${team.id} RETURNING ${columns}`.pipe(Effect.map(([updated]) => updated), Effect.orDie)
    }

    return {
      listForUser,
      listOfOrganization,
      find,
      findWithRole,
      create,
      update,
      /** The contract's JSON form of `teams t`, for other repositories' statements. */
      columns
    } as const
  })
}) {}
