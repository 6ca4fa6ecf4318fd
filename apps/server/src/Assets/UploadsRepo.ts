import { SqlClient } from "@effect/sql"
import type { AssetUploadId, OrganizationId, TeamId, UploadAssetFields } from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { selectFields } from "../Database/Columns.js"

/** Where a presigned upload is: its bytes awaited, arriving by PUT to the server, stored, or being completed. */
export type UploadState = "pending" | "receiving" | "received" | "completing"

/** Where presigned uploads' objects are stored: `uploads/<team>/<upload>`. */
export const uploadsPrefix = "uploads/"

/** The states a process holds by a claim, which lapses unless renewed (`claimed_until`). */
export const claimedStates: ReadonlyArray<UploadState> = ["receiving", "completing"]

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

    const lapsed = sql`(state IN ('receiving', 'completing') AND (claimed_until IS NULL OR claimed_until <= now()))`
    const held = sql`(state IN ('receiving', 'completing') AND claimed_until > now())`

    const columns = selectFields<PendingUpload>(sql, {
      id: "id",
      teamId: "team_id",
      size: "size::float8",
      sha256: "sha256",
      fields: "fields",
      storageKey: "storage_key",
      // A lapsed claim is the state before it: its process died (a PUT then stored nothing; a completion then had the bytes).
      state: sql`CASE WHEN ${lapsed} THEN (CASE state WHEN 'receiving' THEN 'pending' ELSE 'received' END) ELSE state END`
    })

    const insert = (upload: Omit<PendingUpload, "state"> & { readonly organizationId: OrganizationId; readonly expiresAt: Date }) =>
      sql`INSERT INTO asset_uploads (id, team_id, organization_id, size, sha256, fields, storage_key, expires_at)
        VALUES (${upload.id}, ${upload.teamId}, ${upload.organizationId}, ${upload.size}, ${upload.sha256},
          ${JSON.stringify(upload.fields)}::jsonb, ${upload.storageKey}, ${upload.expiresAt.toISOString()}::timestamptz)`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Asset", "write")
      )

    /** The team's uploads that expired, but for one a process still works on: their objects are the storage sweep's. */
    const forgetExpired = (teamId: TeamId) =>
      sql`DELETE FROM asset_uploads WHERE team_id = ${teamId} AND expires_at <= now() AND NOT ${held}`.pipe(
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

    // These serve signed PUTs too, which no caller makes.
    /** Sets the state; a claimed one is held `claimSeconds` from now, unless renewed. */
    const setState = (id: AssetUploadId, state: UploadState, claimSeconds: number) =>
      sql`UPDATE asset_uploads SET state = ${state}, claimed_until = ${
        claimedStates.includes(state) ? sql`now() + make_interval(secs => ${claimSeconds})` : null
      } WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    /** Keeps the upload's claim `claimSeconds` more from now: its process is still at work. */
    const renewClaim = (id: AssetUploadId, claimSeconds: number) =>
      sql`UPDATE asset_uploads SET claimed_until = now() + make_interval(secs => ${claimSeconds})
        WHERE id = ${id} AND state IN ('receiving', 'completing')`.pipe(Effect.asVoid, Effect.orDie)

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

    /**
     * Of these keys, those whose upload can still use its object: unexpired, or with a process still at work on
     * it. The others' objects are leftovers (a spent upload's URL PUT again, an upload that expired).
     */
    const keysInUse = (keys: ReadonlyArray<string>) =>
      sql<{ readonly key: string }>`SELECT storage_key AS key FROM asset_uploads
        WHERE storage_key IN (SELECT jsonb_array_elements_text(${JSON.stringify(keys)}::jsonb))
          AND (expires_at > now() OR ${held})`.pipe(
        Effect.map((rows) => new Set(rows.map(({ key }) => key))),
        Effect.orDie
      )

    return { insert, forgetExpired, openClaims, lockOfTeam, lockForPut, setState, renewClaim, remove, keysInUse } as const
  })
}) {}
