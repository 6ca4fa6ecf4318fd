import { SqlClient } from "@effect/sql"
import type { ApiKeyId, MemberRole, OrganizationId, Team, TeamId, UserId } from "@postline/domain"
import { Effect, Option } from "effect"
import { TeamsRepo } from "../Teams/Repo.js"

/**
 * Whether the rows that grant a permission are locked until the transaction
 * ends: checks before a write lock them, so that a role change, a removal or
 * a key's revocation waits for the write that relied on it. A membership is
 * locked FOR KEY SHARE, which role changes conflict with (they lock FOR UPDATE)
 * and the organization's name copied into it does not.
 */
export interface LockOption {
  readonly lock: boolean
}

/** The SQL of access checks: who holds which role where. */
export class AccessRepo extends Effect.Service<AccessRepo>()("AccessRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const teams = yield* TeamsRepo
    const lockMembership = ({ lock }: LockOption) => sql.literal(lock ? "FOR KEY SHARE OF m" : "")

    /** The user's role in the organization, if a member. */
    const roleOf = (userId: UserId, organizationId: OrganizationId, options: LockOption) =>
      sql<{ role: MemberRole }>`SELECT m.role FROM memberships m
        WHERE m.user_id = ${userId} AND m.organization_id = ${organizationId} ${lockMembership(options)}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row?.role)),
        Effect.orDie
      )

    /** Whether the API key is still neither revoked nor expired, locking it against revocation meanwhile. */
    const lockActiveKey = (apiKeyId: ApiKeyId) =>
      sql`SELECT 1 FROM api_keys WHERE id = ${apiKeyId}
        AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) FOR SHARE`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /** The team and the user's role in its organization, if a member, in one statement. */
    const teamWithRole = (teamId: TeamId, userId: UserId, options: LockOption) =>
      sql<Team & { readonly role: MemberRole }>`SELECT ${teams.columns}, m.role FROM teams t
        JOIN memberships m ON m.organization_id = t.organization_id AND m.user_id = ${userId}
        WHERE t.id = ${teamId} ${lockMembership(options)}`.pipe(
        Effect.map(([row]) => Option.map(Option.fromNullable(row), ({ role, ...team }) => ({ team, role }))),
        Effect.orDie
      )

    /** The team, if it is one of the organization's. */
    const teamOf = (teamId: TeamId, organizationId: OrganizationId) =>
      sql<Team>`SELECT ${teams.columns} FROM teams t WHERE t.id = ${teamId} AND t.organization_id = ${organizationId}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie
      )

    return { roleOf, lockActiveKey, teamWithRole, teamOf } as const
  }),
  dependencies: [TeamsRepo.Default]
}) {}
