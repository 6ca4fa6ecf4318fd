import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { isoUtc, selectFields } from "../Database/Columns.js"
import type { OrganizationSummary, UserSummary } from "./Api.js"

type UserSummary = typeof UserSummary.Type
type OrganizationSummary = typeof OrganizationSummary.Type

/** What the operator lists: every user and every organization, oldest first. */
export class AdminRepo extends Effect.Service<AdminRepo>()("AdminRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const userFields = selectFields<UserSummary>(sql, {
      id: "u.id",
      email: "u.email",
      name: "u.name",
      createdAt: isoUtc("u.created_at"),
      hasPassword: "u.password_hash IS NOT NULL",
      organizations: "(SELECT count(*)::int FROM memberships m WHERE m.user_id = u.id)"
    })
    const organizationFields = selectFields<OrganizationSummary>(sql, {
      id: "o.id",
      name: "o.name",
      createdAt: isoUtc("o.created_at"),
      members: "(SELECT count(*)::int FROM memberships m WHERE m.organization_id = o.id)",
      teams: "(SELECT count(*)::int FROM teams t WHERE t.organization_id = o.id)",
      creditsAvailable: "(o.credits_balance - o.reserved_credits)::float8"
    })

    return {
      listUsers: (limit: number) =>
        sql<UserSummary>`SELECT ${userFields} FROM users u ORDER BY u.created_at, u.id LIMIT ${limit}`.pipe(Effect.orDie),
      listOrganizations: (limit: number) =>
        sql<OrganizationSummary>`SELECT ${organizationFields} FROM organizations o ORDER BY o.created_at, o.id LIMIT ${limit}`
          .pipe(Effect.orDie),
      /** Whether anyone can log in yet: an empty installation tells its operator how to begin. */
      hasUsers: sql<{ readonly exists: boolean }>`SELECT EXISTS (SELECT 1 FROM users) AS exists`.pipe(
        Effect.map(([row]) => row.exists),
        Effect.orDie
      )
    } as const
  })
}) {}
