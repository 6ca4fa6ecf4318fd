import { SqlClient } from "@effect/sql"
import { Conflict, type Member, type MemberRole, NotFound, type OrganizationId, type UserId } from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc, selectFields } from "../Database/Columns.js"
import { type PageRequest, paginate, type SortColumns } from "../Pagination/Keyset.js"

const memberSortColumns: SortColumns = {
  createdAt: "m.created_at",
  updatedAt: "m.updated_at",
  // The same code-point order as organization and team names.
  name: "u.name COLLATE \"C\"",
  id: "m.user_id"
}

export class MembersRepo extends Effect.Service<MembersRepo>()("MembersRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

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
      }).pipe(Effect.orDie, policyRequire("Member", "list"))

    const find = (organizationId: OrganizationId, userId: UserId) =>
      sql<Member>`SELECT ${columns} ${membersOf(organizationId)} AND m.user_id = ${userId}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    /**
     * The organization's admins and owners and the members named, locked for
     * update in one order (by user id), so that concurrent changes of roles
     * take turns and cannot together take away the last admin or owner.
     */
    const lockManagersAnd = (organizationId: OrganizationId, userIds: ReadonlyArray<UserId>) =>
      sql<Member>`SELECT ${columns} ${membersOf(organizationId)}
          AND (m.role IN ('owner', 'admin') OR m.user_id IN ${sql.in(userIds)})
        ORDER BY m.user_id FOR UPDATE OF m`.pipe(Effect.orDie)

    /** Adds an existing user; 404 for an unknown email, 409 for a member already. */
    const add = (organizationId: OrganizationId, email: string, role: MemberRole) =>
      Effect.gen(function*() {
        const [user] = yield* sql<{ id: UserId }>`SELECT id FROM users WHERE lower(email) = lower(${email})`
        if (user === undefined) return yield* new NotFound({ message: `No user with email ${email}` })
        const inserted = yield* sql`INSERT INTO memberships (user_id, organization_id, role)
          VALUES (${user.id}, ${organizationId}, ${role}) ON CONFLICT DO NOTHING RETURNING user_id`
        if (inserted.length === 0) return yield* new Conflict({ message: `${email} is already a member`, reason: "already_member" })
        return Option.getOrThrow(yield* find(organizationId, user.id))
      }).pipe(Effect.catchTag("SqlError", Effect.die), policyRequire("Member", "add"))

    const setRole = (organizationId: OrganizationId, userId: UserId, role: MemberRole) =>
      sql`UPDATE memberships SET role = ${role}, updated_at = now()
        WHERE organization_id = ${organizationId} AND user_id = ${userId}`.pipe(
        Effect.zipRight(find(organizationId, userId)),
        Effect.map(Option.getOrThrow),
        Effect.orDie,
        policyRequire("Member", "change")
      )

    const remove = (organizationId: OrganizationId, userId: UserId) =>
      sql`DELETE FROM memberships WHERE organization_id = ${organizationId} AND user_id = ${userId}`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Member", "change")
      )

    return { list, lockManagersAnd, add, setRole, remove } as const
  })
}) {}
