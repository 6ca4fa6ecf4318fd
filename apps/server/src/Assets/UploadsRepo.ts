import { SqlClient } from "@effect/sql"
import type { AssetUploadId, OrganizationId, TeamId, UploadAssetFields } from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { selectFields } from "../Database/Columns.js"

/** Where a presigned upload is: its bytes awaited, arriving by PUT to the server, stored, or being completed. */
export type UploadState = "pending" | "receiving" | "received" | "completing"

export interface PendingUpload {
  readonly id: AssetUploadId
  readonly teamId: TeamId
  readonly size: number
  /** Lower-case hex, when the upload declared one. */
  readonly sha256: string | null
  readonly fields: UploadAssetFields
  readonly storageKey: string
  readonly state: UploadState
}

/** Presigned uploads until they are completed; one whose `expires_at` has passed is as good as gone. */
export class UploadsRepo extends Effect.Service<UploadsRepo>()("Assets/UploadsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const columns = selectFields<PendingUpload>(sql, {
      id: "id",
      teamId: "team_id",
      size: "size::float8",
      sha256: "sha256",
      fields: "fields",
      storageKey: "storage_key",
      state: "state"
    })

    const insert = (upload: Omit<PendingUpload, "state"> & { readonly organizationId: OrganizationId; readonly expiresAt: Date }) =>
      sql`INSERT INTO asset_uploads (id, team_id, organization_id, size, sha256, fields, storage_key, expires_at)
        VALUES (${upload.id}, ${upload.teamId}, ${upload.organizationId}, ${upload.size}, ${upload.sha256},
          ${JSON.stringify(upload.fields)}::jsonb, ${upload.storageKey}, ${upload.expiresAt.toISOString()}::timestamptz)`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Asset", "write")
      )

    /** The team's uploads that expired: their objects are the storage sweep's already. */
    const forgetExpired = (teamId: TeamId) =>
      sql`DELETE FROM asset_uploads WHERE team_id = ${teamId} AND expires_at <= now()`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Asset", "write")
      )

    const lock = (id: AssetUploadId, teamId?: TeamId) =>
      sql<PendingUpload>`SELECT ${columns} FROM asset_uploads WHERE id = ${id}
        ${teamId === undefined ? sql`` : sql`AND team_id = ${teamId}`} AND expires_at > now() FOR UPDATE`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    /** The team's unexpired upload, locked until the transaction ends. */
    const lockOfTeam = (teamId: TeamId, id: AssetUploadId) => lock(id, teamId).pipe(policyRequire("Asset", "write"))

    /** The unexpired upload a signed PUT names, locked: the signature is the permission. */
    const lockForPut = (id: AssetUploadId) => lock(id)

    // Both serve signed PUTs too, which no caller makes.
    const setState = (id: AssetUploadId, state: UploadState) =>
      sql`UPDATE asset_uploads SET state = ${state} WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    const remove = (id: AssetUploadId) => sql`DELETE FROM asset_uploads WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    /** What open uploads claim: the organization's declared bytes, and how many the team has. */
    const openClaims = (organizationId: OrganizationId, teamId: TeamId) =>
      sql<{ readonly bytes: number; readonly teamUploads: number }>`SELECT coalesce(sum(size), 0)::float8 AS bytes,
          count(*) FILTER (WHERE team_id = ${teamId})::int AS "teamUploads"
        FROM asset_uploads WHERE organization_id = ${organizationId} AND expires_at > now()`.pipe(
        Effect.map(([row]) => row!),
        Effect.orDie,
        policyRequire("Asset", "write")
      )

    return { insert, forgetExpired, openClaims, lockOfTeam, lockForPut, setState, remove } as const
  })
}) {}
