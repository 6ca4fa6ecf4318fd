import { SqlClient } from "@effect/sql"
import type { Asset, AssetId, AssetListQuery, FolderId, OrganizationId, TeamId, UpdateAsset } from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc, selectFields } from "../Database/Columns.js"
import { type PageRequest, paginate, sortColumnsOf } from "../Pagination/Keyset.js"

/** An asset as stored: what the API shows but its signed URLs, and where its bytes are. */
export type StoredAsset = Omit<Asset, "url" | "thumbnailUrl" | "urlExpiresAt"> & {
  readonly storageKey: string
  readonly thumbnailKey: string | null
}

export interface NewAsset {
  readonly id: AssetId
  readonly teamId: TeamId
  readonly organizationId: OrganizationId
  readonly folderId: FolderId | null
  readonly name: string
  readonly kind: Asset["kind"]
  readonly contentType: string
  readonly size: number
  readonly storedBytes: number
  /** Of the bytes as uploaded: a repeated upload of them finds this asset. */
  readonly sha256: string
  /** Of the stored copy, the bytes its URL serves (an image is stored rewritten). */
  readonly storedSha256: string
  readonly width: number | null
  readonly height: number | null
  readonly altText: string | null
  readonly storageKey: string
  readonly thumbnailKey: string | null
}

// LIKE's own characters in a search are matched as themselves.
const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (char) => `\\${char}`)}%`

export class AssetsRepo extends Effect.Service<AssetsRepo>()("AssetsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const columns = selectFields<StoredAsset>(sql, {
      id: "a.id",
      teamId: "a.team_id",
      folderId: "a.folder_id",
      name: "a.name",
      kind: "a.kind",
      contentType: "a.content_type",
      size: "a.size::float8",
      sha256: "a.sha256",
      width: "a.width",
      height: "a.height",
      altText: "a.alt_text",
      createdAt: isoUtc("a.created_at"),
      updatedAt: isoUtc("a.updated_at"),
      storageKey: "a.storage_key",
      thumbnailKey: "a.thumbnail_key"
    })

    const one = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

    const list = (teamId: TeamId, filters: Pick<AssetListQuery, "folderId" | "kind" | "q">, request: PageRequest) =>
      paginate<StoredAsset>({
        sql,
        request,
        columns: sortColumnsOf("a"),
        idOf: (asset) => asset.id,
        select: columns,
        rowsFrom: sql`FROM assets a WHERE a.team_id = ${teamId}
          ${filters.folderId === undefined ? sql`` : sql`AND a.folder_id = ${filters.folderId}`}
          ${filters.kind === undefined ? sql`` : sql`AND a.kind = ${filters.kind}`}
          ${
          filters.q === undefined
            ? sql``
            : sql`AND (a.name ILIKE ${likePattern(filters.q)} OR a.alt_text ILIKE ${likePattern(filters.q)})`
        }`
      }).pipe(Effect.orDie, policyRequire("Asset", "read"))

    const find = (teamId: TeamId, id: AssetId) =>
      sql<StoredAsset>`SELECT ${columns} FROM assets a WHERE a.team_id = ${teamId} AND a.id = ${id}`.pipe(
        Effect.map(one),
        Effect.orDie,
        policyRequire("Asset", "read")
      )

    /** An asset anyone holding its signed URL may read: the signature is the permission. */
    const findForDownload = (teamId: TeamId, id: AssetId) =>
      sql<StoredAsset>`SELECT ${columns} FROM assets a WHERE a.team_id = ${teamId} AND a.id = ${id}`.pipe(
        Effect.map(one),
        Effect.orDie
      )

    /** The team's asset of these bytes, which an upload of them answers with. */
    const findBySha256 = (teamId: TeamId, sha256: string) =>
      sql<StoredAsset>`SELECT ${columns} FROM assets a WHERE a.team_id = ${teamId} AND a.sha256 = ${sha256}`.pipe(
        Effect.map(one),
        Effect.orDie,
        policyRequire("Asset", "write")
      )

    /**
     * The team's organization and its stored bytes, its row locked until the transaction ends: uploads of one
     * organization check the quota one at a time, each seeing the bytes of those before it.
     */
    const lockStorageOf = (teamId: TeamId) =>
      sql<{ readonly organizationId: OrganizationId; readonly mediaBytes: number }>`SELECT o.id AS "organizationId",
          o.media_bytes::float8 AS "mediaBytes"
        FROM organizations o JOIN teams t ON t.organization_id = o.id WHERE t.id = ${teamId} FOR NO KEY UPDATE OF o`.pipe(
        Effect.map(([row]) => row!),
        Effect.orDie,
        policyRequire("Asset", "write")
      )

    /** Whether the folder is the team's, kept from being deleted until the transaction ends. */
    const holdFolder = (teamId: TeamId, folderId: FolderId) =>
      sql`SELECT 1 FROM folders WHERE team_id = ${teamId} AND id = ${folderId} FOR KEY SHARE`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie,
        policyRequire("Asset", "write")
      )

    const insert = (asset: NewAsset) =>
      sql<StoredAsset>`INSERT INTO assets AS a (id, team_id, organization_id, folder_id, name, kind, content_type, size,
          stored_bytes, sha256, stored_sha256, width, height, alt_text, storage_key, thumbnail_key)
        VALUES (${asset.id}, ${asset.teamId}, ${asset.organizationId}, ${asset.folderId}, ${asset.name}, ${asset.kind},
          ${asset.contentType}, ${asset.size}, ${asset.storedBytes}, ${asset.sha256}, ${asset.storedSha256}, ${asset.width},
          ${asset.height}, ${asset.altText}, ${asset.storageKey}, ${asset.thumbnailKey})
        RETURNING ${columns}`.pipe(Effect.map(([row]) => row!), Effect.orDie, policyRequire("Asset", "write"))

    const update = (teamId: TeamId, id: AssetId, changes: UpdateAsset) => {
      const assignments = [
        changes.name !== undefined ? sql`name = ${changes.name}` : undefined,
        changes.altText !== undefined ? sql`alt_text = ${changes.altText}` : undefined,
        changes.folderId !== undefined ? sql`folder_id = ${changes.folderId}` : undefined
      ].filter((fragment) => fragment !== undefined)
      return sql<StoredAsset>`UPDATE assets a SET ${sql.csv([...assignments, sql`updated_at = now()`])}
        WHERE a.team_id = ${teamId} AND a.id = ${id} RETURNING ${columns}`.pipe(
        Effect.map(one),
        Effect.orDie,
        policyRequire("Asset", "write")
      )
    }

    /**
     * Locks the asset for deleting and answers the status of a post that is not a draft and carries it, if
     * any: a publish holds its assets (FOR KEY SHARE) from its check to its end, so either it waits for the
     * delete and finds the asset gone, or the delete waits for it and finds the post.
     */
    const lockUnlessCarried = (teamId: TeamId, id: AssetId) =>
      Effect.gen(function*() {
        const locked = yield* sql`SELECT 1 FROM assets WHERE team_id = ${teamId} AND id = ${id} FOR UPDATE`
        if (locked.length === 0) return Option.none<{ readonly carriedBy: Option.Option<string> }>()
        const [post] = yield* sql<{ readonly status: string }>`SELECT p.status
          FROM (SELECT post_id FROM post_media WHERE asset_id = ${id}
            UNION ALL SELECT post_id FROM post_part_media WHERE asset_id = ${id}) pm JOIN posts p ON p.id = pm.post_id
          WHERE p.status <> 'draft' LIMIT 1`
        return Option.some({ carriedBy: Option.fromNullable(post?.status) })
      }).pipe(Effect.orDie, policyRequire("Asset", "write"))

    /**
     * Deletes the asset, and takes it out of the drafts that carry it; its objects go to the storage garbage
     * by trigger, in the same transaction.
     */
    const remove = (teamId: TeamId, id: AssetId) =>
      sql<StoredAsset>`DELETE FROM assets a WHERE a.team_id = ${teamId} AND a.id = ${id} RETURNING ${columns}`.pipe(
        Effect.map(one),
        Effect.orDie,
        policyRequire("Asset", "write")
      )

    /** The hash of an asset's stored copy, read from storage for one stored before such hashes were recorded. */
    const recordStoredSha256 = (id: AssetId, storedSha256: string) =>
      sql`UPDATE assets SET stored_sha256 = ${storedSha256} WHERE id = ${id} AND stored_sha256 IS NULL`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    return {
      list,
      find,
      findForDownload,
      findBySha256,
      lockStorageOf,
      holdFolder,
      insert,
      update,
      lockUnlessCarried,
      remove,
      recordStoredSha256
    } as const
  })
}) {}
