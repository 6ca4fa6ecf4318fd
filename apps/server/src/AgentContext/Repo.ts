import { SqlClient } from "@effect/sql"
import {
  AgentContextLimit,
  type AgentDefaults,
  type AgentDefaultsChoice,
  Caller,
  type Organization,
  type SetAgentDefaults,
  type Team
} from "@postline/domain"
import { Effect } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { OrganizationsRepo } from "../Organizations/Repo.js"
import { TeamsRepo } from "../Teams/Repo.js"

/** Lists are read one row beyond the limit, to learn whether more follow. */
const firstItems = <A>(rows: ReadonlyArray<A>) => ({
  data: rows.slice(0, AgentContextLimit),
  hasMore: rows.length > AgentContextLimit
})

const noDefaults: AgentDefaults = { organizationId: null, teamId: null }

/**
 * The agent context in three statements, run together, whatever the caller's
 * size: each list is an index range scan stopped by its LIMIT, and the
 * defaults are a few index lookups.
 */
export class AgentContextRepo extends Effect.Service<AgentContextRepo>()("AgentContextRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const organizations = yield* OrganizationsRepo
    const teams = yield* TeamsRepo
    const limit = sql.literal(String(AgentContextLimit + 1))

    /**
     * What the caller sees, as the rest of the API decides it (AccessPolicy): a
     * user their memberships' organizations and all of their teams, an API key
     * its own organization and its teams.
     */
    const scopeOf = Caller.$match({
      User: ({ user }) => ({
        organizationColumns: organizations.memberColumns,
        // memberships_user_joined and team_access_user_created_at hold these orders.
        organizations: sql`FROM memberships m JOIN organizations o ON o.id = m.organization_id
          WHERE m.user_id = ${user.id} ORDER BY m.created_at, m.organization_id`,
        teams: sql`FROM team_access a JOIN teams t ON t.id = a.team_id
          WHERE a.user_id = ${user.id} ORDER BY a.created_at, a.team_id`,
        // A saved choice counts while the user is a member: every team of the organization is then visible.
        saved: sql`SELECT d.organization_id, d.team_id FROM agent_defaults d
          JOIN memberships m ON m.user_id = d.user_id AND m.organization_id = d.organization_id
          WHERE d.user_id = ${user.id}`,
        fallback: sql`SELECT m.organization_id FROM memberships m WHERE m.user_id = ${user.id}
          ORDER BY m.created_at, m.organization_id LIMIT 1`
      }),
      ApiKey: ({ apiKeyId, organizationId }) => ({
        organizationColumns: organizations.columns,
        organizations: sql`FROM organizations o WHERE o.id = ${organizationId}`,
        teams: sql`FROM teams t WHERE t.organization_id = ${organizationId} ORDER BY t.created_at, t.id`,
        saved: sql`SELECT d.organization_id, d.team_id FROM agent_defaults d
          WHERE d.api_key_id = ${apiKeyId} AND d.organization_id = ${organizationId}`,
        fallback: sql`SELECT ${organizationId}::uuid AS organization_id`
      })
    })

    /** The context but its user: the first organizations and teams, and the defaults. */
    const read = (caller: Caller) => {
      const scope = scopeOf(caller)
      // The saved choice, else the fallback organization; a missing team is the organization's oldest.
      const defaults = sql<AgentDefaults>`
        WITH chosen AS (
          SELECT organization_id, team_id FROM (
            SELECT organization_id, team_id, 0 AS preference FROM (${scope.saved}) saved
            UNION ALL
            SELECT organization_id, NULL::uuid, 1 FROM (${scope.fallback}) fallback
          ) candidates ORDER BY preference LIMIT 1
        )
        SELECT c.organization_id AS "organizationId", coalesce(c.team_id, (SELECT t.id FROM teams t
          WHERE t.organization_id = c.organization_id ORDER BY t.created_at, t.id LIMIT 1)) AS "teamId"
        FROM chosen c`
      return Effect.all({
        organizations: Effect.map(sql<Organization>`SELECT ${scope.organizationColumns} ${scope.organizations} LIMIT ${limit}`, firstItems),
        teams: Effect.map(sql<Team>`SELECT ${teams.columns} ${scope.teams} LIMIT ${limit}`, firstItems),
        defaults: Effect.map(defaults, ([row]) => row ?? noDefaults)
      }, { concurrency: "unbounded" }).pipe(Effect.orDie, policyRequire("AgentContext", "read"))
    }

    /** Whose choice a row is: a user's, or an API key's own. */
    const ownerOf = Caller.$match({
      User: ({ user }) => ({ column: sql("user_id"), id: user.id }),
      ApiKey: ({ apiKeyId }) => ({ column: sql("api_key_id"), id: apiKeyId })
    })

    /** Saves the caller's choice, replacing any earlier one. */
    const save = (caller: Caller, choice: SetAgentDefaults) => {
      const owner = ownerOf(caller)
      return sql<AgentDefaultsChoice>`INSERT INTO agent_defaults (${owner.column}, organization_id, team_id)
        VALUES (${owner.id}, ${choice.organizationId}, ${choice.teamId})
        ON CONFLICT (${owner.column}) DO UPDATE
          SET organization_id = EXCLUDED.organization_id, team_id = EXCLUDED.team_id, updated_at = now()
        RETURNING organization_id AS "organizationId", team_id AS "teamId"`.pipe(
        Effect.map(([row]) => row),
        Effect.orDie,
        policyRequire("AgentContext", "choose")
      )
    }

    return { read, save } as const
  }),
  dependencies: [OrganizationsRepo.Default, TeamsRepo.Default]
}) {}
