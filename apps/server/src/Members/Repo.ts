import { SqlClient, type SqlError } from "@effect/sql"
import { Conflict, type Member, type MemberRole, NotFound, type OrganizationId, type UserId } from "@postline/domain"
import { Effect, Option } from "effect"
import { ApiKeysRepo } from "../ApiKeys/Repo.js"
import { isoUtc, selectFields } from "../Database/Columns.js"
import { type PageRequest, paginate, type SortColumns } from "../Pagination/Keyset.js"

const memberSortColumns: SortColumns = {
  createdAt: "m.created_at",
  updatedAt: "m.updated_at",
  // The same code-point order as organization and team names.
  name: "u.name COLLATE \"C\"",
  id: "m.user_id"
}

const lastManager = new Conflict({ message: "An organization keeps at least one admin or owner" })

export class MembersRepo extends Effect.Service<MembersRepo>()("MembersRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const apiKeys = yield* ApiKeysRepo

    // The exact JSON form of the contract's Member: rows are sent as they come.
    const columns = selectFields<Member>(sql, {
      organizationId: "m.organization_id",
      userId: "m.user_id",
      email: "u.email",
      name: "u.name",
      role: "m.role",
      createdAt: isoUtc("m.created_at"),
      updatedAt: isoUtc("m.updated_at")
    })
    const membersOf = (organizationId: OrganizationId) =>
      sql`FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.organization_id = ${organizationId}`

    const list = (organizationId: OrganizationId, request: PageRequest) =>
      paginate<Member>({
        sql,
        request,
        columns: memberSortColumns,
        idOf: (member) => member.userId,
        select: columns,
        rowsFrom: membersOf(organizationId)
      }).pipe(Effect.orDie)

    const find = (organizationId: OrganizationId, userId: UserId) =>
      sql<Member>`SELECT ${columns} ${membersOf(organizationId)} AND m.user_id = ${userId}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    /** Adds an existing user; 404 for an unknown email, 409 for a member already. */
    const add = (organizationId: OrganizationId, email: string, role: MemberRole) =>
      Effect.gen(function*() {
        const [user] = yield* sql<{ id: UserId }>`SELECT id FROM users WHERE lower(email) = lower(${email})`
        if (user === undefined) return yield* new NotFound({ message: `No user with email ${email}` })
        const inserted = yield* sql`INSERT INTO memberships (user_id, organization_id, role)
          VALUES (${user.id}, ${organizationId}, ${role}) ON CONFLICT DO NOTHING RETURNING user_id`
        if (inserted.length === 0) return yield* new Conflict({ message: `${email} is already a member` })
        return Option.getOrThrow(yield* find(organizationId, user.id))
      }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))

    /**
     * Runs `change` on the member while holding the organization's admins and
     * owners, so that two concurrent changes cannot both take away the last one.
     */
    const withManagersLocked = <A, E>(
      organizationId: OrganizationId,
      userId: UserId,
      change: (leavesNoManager: boolean) => Effect.Effect<A, E | SqlError.SqlError>
    ) =>
      Effect.gen(function*() {
        const managers = yield* sql<{ userId: UserId }>`SELECT user_id AS "userId" FROM memberships
          WHERE organization_id = ${organizationId} AND role IN ('owner', 'admin') FOR UPDATE`
        const onlyManager = managers.length === 1 && managers[0].userId === userId
        return yield* change(onlyManager)
      }).pipe(sql.withTransaction)

    const setRole = (organizationId: OrganizationId, userId: UserId, role: MemberRole) =>
      withManagersLocked(organizationId, userId, (onlyManager) =>
        Effect.gen(function*() {
          if (onlyManager && role === "member") return yield* lastManager
          yield* sql`UPDATE memberships SET role = ${role}, updated_at = now()
            WHERE organization_id = ${organizationId} AND user_id = ${userId}`
          if (role === "member") yield* apiKeys.revokeCreatedBy(organizationId, userId)
          return Option.getOrThrow(yield* find(organizationId, userId))
        })).pipe(Effect.catchTag("SqlError", Effect.die))

    /** Removes the member, who loses access at once; answers the member as they were. */
    const remove = (organizationId: OrganizationId, member: Member) =>
      withManagersLocked(organizationId, member.userId, (onlyManager) =>
        Effect.gen(function*() {
          if (onlyManager) return yield* lastManager
          yield* sql`DELETE FROM memberships WHERE organization_id = ${organizationId} AND user_id = ${member.userId}`
          yield* apiKeys.revokeCreatedBy(organizationId, member.userId)
          return member
        })).pipe(Effect.catchTag("SqlError", Effect.die))

    return { list, find, add, setRole, remove } as const
  }),
  dependencies: [ApiKeysRepo.Default]
}) {}
