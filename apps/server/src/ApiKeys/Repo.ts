import { SqlClient } from "@effect/sql"
import type { ApiKey, ApiKeyId, CreateApiKey, OrganizationId, UserId } from "@postline/domain"
import { Effect, Option, Redacted } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc, selectFields } from "../Database/Columns.js"
import { type PageRequest, paginate, type SortColumns } from "../Pagination/Keyset.js"
import { generateSecret, hashSecret } from "../Users/Secrets.js"

const sortColumns: SortColumns<"createdAt" | "name"> = { createdAt: "k.created_at", name: "k.name", id: "k.id" }

/** How many of the key's first characters are kept in clear, to recognise it by. */
const prefixLength = 12

/** A key that may act, as the authentication sees it. */
export interface ActiveApiKey {
  readonly id: ApiKeyId
  readonly organizationId: OrganizationId
  /** Whether lastUsedAt is older than a minute, or unset: only then is the use recorded. */
  readonly useIsStale: boolean
}

export class ApiKeysRepo extends Effect.Service<ApiKeysRepo>()("ApiKeysRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // The exact JSON form of ApiKey: rows are sent as they come.
    const columns = selectFields<ApiKey>(sql, {
      id: "k.id",
      organizationId: "k.organization_id",
      name: "k.name",
      prefix: "k.prefix",
      createdByUserId: "k.created_by_user_id",
      createdAt: isoUtc("k.created_at"),
      expiresAt: isoUtc("k.expires_at"),
      lastUsedAt: isoUtc("k.last_used_at"),
      revokedAt: isoUtc("k.revoked_at")
    })

    /** Creates a key; its secret is returned this once and stored as a hash. */
    const create = (organizationId: OrganizationId, createdBy: UserId, input: CreateApiKey) =>
      Effect.gen(function*() {
        const key = generateSecret("apiKey")
        const [row] = yield* sql<ApiKey>`INSERT INTO api_keys AS k
            (organization_id, name, prefix, key_hash, created_by_user_id, expires_at)
          VALUES (${organizationId}, ${input.name}, ${key.slice(0, prefixLength)}, ${hashSecret(key)},
            ${createdBy}, ${input.expiresAt ?? null}::timestamptz)
          RETURNING ${columns}`
        return { ...row, key }
      }).pipe(Effect.orDie, policyRequire("ApiKey", "manage"))

    const list = (organizationId: OrganizationId, request: PageRequest<"createdAt" | "name">) =>
      paginate<ApiKey, "createdAt" | "name">({
        sql,
        request,
        columns: sortColumns,
        idOf: (key) => key.id,
        select: columns,
        rowsFrom: sql`FROM api_keys k WHERE k.organization_id = ${organizationId}`
      }).pipe(Effect.orDie, policyRequire("ApiKey", "manage"))

    /** Revokes the key, once: a revoked key keeps its first revokedAt. */
    const revoke = (organizationId: OrganizationId, id: ApiKeyId) =>
      sql<ApiKey>`UPDATE api_keys k SET revoked_at = coalesce(k.revoked_at, now())
        WHERE k.organization_id = ${organizationId} AND k.id = ${id} RETURNING ${columns}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie,
        policyRequire("ApiKey", "manage")
      )

    /**
     * Revokes the keys a person created once they may no longer manage keys
     * (removed, or now a plain member): they may still hold the secrets.
     */
    const revokeCreatedBy = (organizationId: OrganizationId, userId: UserId) =>
      sql`UPDATE api_keys SET revoked_at = now()
        WHERE organization_id = ${organizationId} AND created_by_user_id = ${userId} AND revoked_at IS NULL`.pipe(
        Effect.asVoid,
        Effect.orDie,
        policyRequire("Member", "change")
      )

    /** The key with this secret, if it is neither revoked nor expired. */
    const findActive = (key: Redacted.Redacted) =>
      sql<ActiveApiKey>`SELECT id, organization_id AS "organizationId",
          coalesce(last_used_at < now() - interval '1 minute', true) AS "useIsStale"
        FROM api_keys WHERE key_hash = ${hashSecret(Redacted.value(key))}
          AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    /** Sets lastUsedAt, at most once a minute however many requests race here. */
    const recordUse = (id: ApiKeyId) =>
      sql`UPDATE api_keys SET last_used_at = now()
        WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`.pipe(Effect.asVoid)

    return { create, list, revoke, revokeCreatedBy, findActive, recordUse } as const
  })
}) {}
