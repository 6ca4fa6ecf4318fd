import { SqlClient } from "@effect/sql"
import type { Folder, FolderId, TeamId } from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc, selectFields } from "../Database/Columns.js"
import { type PageRequest, paginate, sortColumnsOf } from "../Pagination/Keyset.js"

export class FoldersRepo extends Effect.Service<FoldersRepo>()("FoldersRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // The exact JSON form of Folder: rows are sent as they come.
    const columns = selectFields<Folder>(sql, {
      id: "f.id",
      teamId: "f.team_id",
      parentId: "f.parent_id",
      name: "f.name",
      createdAt: isoUtc("f.created_at"),
      updatedAt: isoUtc("f.updated_at")
    })

    const one = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

    const list = (teamId: TeamId, parentId: FolderId | undefined, request: PageRequest) =>
      paginate<Folder>({
        sql,
        request,
        columns: sortColumnsOf("f"),
        idOf: (folder) => folder.id,
        select: columns,
        rowsFrom: sql`FROM folders f WHERE f.team_id = ${teamId}
          ${parentId === undefined ? sql`` : sql`AND f.parent_id = ${parentId}`}`
      }).pipe(Effect.orDie, policyRequire("Folder", "read"))

    const find = (teamId: TeamId, id: FolderId) =>
      sql<Folder>`SELECT ${columns} FROM folders f WHERE f.team_id = ${teamId} AND f.id = ${id}`.pipe(
        Effect.map(one),
        Effect.orDie,
        policyRequire("Folder", "read")
      )

    /**
     * Moves and new folders of a team wait for each other: two moves that each look fine alone (a into b,
     * b into a) would otherwise make a cycle together.
     */
    const lockTree = (teamId: TeamId) =>
      sql`SELECT pg_advisory_xact_lock(hashtextextended(${`folders:${teamId}`}, 0))`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Folder", "write")
      )

    /** Whether the team has this folder, kept from being deleted until the transaction ends (it becomes a parent). */
    const exists = (teamId: TeamId, id: FolderId) =>
      sql`SELECT 1 FROM folders WHERE team_id = ${teamId} AND id = ${id} FOR KEY SHARE`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie,
        policyRequire("Folder", "write")
      )

    /** Whether `ancestor` is `id` or one of the folders above it. */
    const isWithin = (id: FolderId, ancestor: FolderId) =>
      sql<{ readonly found: boolean }>`WITH RECURSIVE up (id, parent_id) AS (
          SELECT id, parent_id FROM folders WHERE id = ${id}
          UNION SELECT f.id, f.parent_id FROM folders f JOIN up ON f.id = up.parent_id
        ) SELECT EXISTS (SELECT 1 FROM up WHERE id = ${ancestor}) AS found`.pipe(
        Effect.map(([row]) => row?.found ?? false),
        Effect.orDie,
        policyRequire("Folder", "write")
      )

    /** Whether the parent already has a folder of this name, other than `except`. */
    const nameTaken = (teamId: TeamId, parentId: FolderId | null, name: string, except?: FolderId) =>
      sql`SELECT 1 FROM folders WHERE team_id = ${teamId} AND parent_id IS NOT DISTINCT FROM ${parentId}
          AND name = ${name} ${except === undefined ? sql`` : sql`AND id <> ${except}`}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie,
        policyRequire("Folder", "write")
      )

    const insert = (teamId: TeamId, draft: { readonly name: string; readonly parentId: FolderId | null }) =>
      sql<Folder>`INSERT INTO folders AS f (team_id, parent_id, name) VALUES (${teamId}, ${draft.parentId}, ${draft.name})
        RETURNING ${columns}`.pipe(Effect.map(([row]) => row!), Effect.orDie, policyRequire("Folder", "write"))

    const update = (teamId: TeamId, id: FolderId, changes: { readonly name: string; readonly parentId: FolderId | null }) =>
      sql<Folder>`UPDATE folders f SET name = ${changes.name}, parent_id = ${changes.parentId}, updated_at = now()
        WHERE f.team_id = ${teamId} AND f.id = ${id} RETURNING ${columns}`.pipe(
        Effect.map(one),
        Effect.orDie,
        policyRequire("Folder", "write")
      )

    /** The folder, locked until the transaction ends: an upload into it waits, and a delete waits for uploads under way. */
    const lock = (teamId: TeamId, id: FolderId) =>
      sql<Folder>`SELECT ${columns} FROM folders f WHERE f.team_id = ${teamId} AND f.id = ${id} FOR UPDATE`.pipe(
        Effect.map(one),
        Effect.orDie,
        policyRequire("Folder", "write")
      )

    /** Whether a folder or an asset is directly in it. */
    const holdsAnything = (id: FolderId) =>
      sql<{ readonly held: boolean }>`SELECT EXISTS (SELECT 1 FROM folders WHERE parent_id = ${id})
          OR EXISTS (SELECT 1 FROM assets WHERE folder_id = ${id}) AS held`.pipe(
        Effect.map(([row]) => row?.held ?? false),
        Effect.orDie,
        policyRequire("Folder", "write")
      )

    const remove = (teamId: TeamId, id: FolderId) =>
      sql`DELETE FROM folders WHERE team_id = ${teamId} AND id = ${id}`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Folder", "write")
      )

    return { list, find, lockTree, exists, isWithin, nameTaken, insert, update, lock, holdsAnything, remove } as const
  })
}) {}
