import { SqlClient } from "@effect/sql"
import type { UserId } from "@postline/domain"
import { type Brand, Effect, Option, Redacted } from "effect"
import { isUniqueViolation } from "../Database/Errors.js"
import { generateSecret, hashSecret } from "../Users/Secrets.js"
import { type Grant, LoginsRepo } from "./LoginsRepo.js"
import { DeviceLoginSettings } from "./Settings.js"
import { generateUserCode } from "./UserCodes.js"

// RFC 8628 §3.5: each slow_down adds 5 seconds to the interval.
const slowDownSeconds = 5
// Kept this long after expiry, so that a late poll still gets expired_token rather than invalid_grant.
const keptAfterExpirySeconds = 60 * 60

/** A device authorization's id: the API never shows it, so it is branded here rather than in the domain. */
export type DeviceAuthorizationId = Brand.Branded<string, "DeviceAuthorizationId">

/** A poll of the token endpoint, as recorded. */
export interface Poll {
  readonly id: DeviceAuthorizationId
  readonly status: "pending" | "approved" | "denied" | "redeemed"
  readonly expired: boolean
  /** Sooner after the previous poll than the interval allowed. */
  readonly tooSoon: boolean
  /** The interval from now on, grown when the poll came too soon. */
  readonly intervalSeconds: number
}

/** Who asks for a login: the client, as it names itself, and the scope it asks for. */
export type Asking = Pick<Grant, "clientId" | "scope">

type Decision =
  | { readonly _tag: "Decided"; readonly clientId: Grant["clientId"] }
  | { readonly _tag: "Expired" }
  | { readonly _tag: "Unknown" }

/** Device authorizations (RFC 8628): the device holds the device code, stored hashed; the user enters the user code. */
export class DeviceAuthorizationsRepo extends Effect.Service<DeviceAuthorizationsRepo>()("DeviceAuthorizationsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const logins = yield* LoginsRepo
    const { deviceCodeLifetimeSeconds, pollingIntervalSeconds } = yield* DeviceLoginSettings

    const insert = ({ clientId, scope }: Asking) =>
      Effect.suspend(() => {
        const deviceCode = generateSecret("deviceCode")
        const userCode = generateUserCode()
        return sql`INSERT INTO device_authorizations
            (device_code_hash, user_code, client_id, scope, interval_seconds, expires_at)
          VALUES (${hashSecret(deviceCode)}, ${userCode}, ${clientId}, ${scope}, ${pollingIntervalSeconds},
            now() + make_interval(secs => ${deviceCodeLifetimeSeconds}))`.pipe(Effect.as({ deviceCode, userCode }))
      })

    /**
     * Authorizations that expired over an hour ago are deleted: whatever their status, they are of no more use,
     * and a pending one would keep its user code taken.
     */
    const deleteLongExpired = sql`DELETE FROM device_authorizations
      WHERE expires_at < now() - make_interval(secs => ${keptAfterExpirySeconds})`

    /**
     * A new pending authorization; a user code that a pending one already has is drawn again. Long-expired
     * authorizations are deleted first, so that the table stays as small as the requests of the last hour or so.
     */
    const create = (asking: Asking) =>
      deleteLongExpired.pipe(
        Effect.zipRight(insert(asking).pipe(Effect.retry({ times: 4, while: (error) => isUniqueViolation(error) }))),
        Effect.orDie
      )

    /**
     * Records a poll of this client's device code and answers the state it found. The row is locked first, so
     * that of two polls at once the second sees the first's time and is too soon.
     */
    const recordPoll = (deviceCode: Redacted.Redacted, clientId: Grant["clientId"]) =>
      sql<Poll>`WITH previous AS (
          SELECT id, coalesce(last_polled_at > now() - make_interval(secs => interval_seconds), false) AS too_soon
          FROM device_authorizations
          WHERE device_code_hash = ${hashSecret(Redacted.value(deviceCode))} AND client_id = ${clientId}
          FOR UPDATE
        )
        UPDATE device_authorizations d SET
          last_polled_at = now(),
          interval_seconds = d.interval_seconds
            + CASE WHEN p.too_soon AND d.status = 'pending' THEN ${slowDownSeconds}::int ELSE 0 END
        FROM previous p WHERE d.id = p.id
        RETURNING d.id, d.status, d.expires_at <= now() AS expired, p.too_soon AS "tooSoon", d.interval_seconds AS "intervalSeconds"`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    /** Starts the login of an approved, unexpired authorization, once: a second redeem finds nothing. */
    const redeem = (id: DeviceAuthorizationId) =>
      Effect.gen(function*() {
        const [grant] = yield* sql<Grant>`
          UPDATE device_authorizations SET status = 'redeemed'
          WHERE id = ${id} AND status = 'approved' AND expires_at > now()
          RETURNING user_id AS "userId", client_id AS "clientId", scope`
        return grant === undefined ? Option.none() : Option.some(yield* logins.start(grant))
      }).pipe(sql.withTransaction, Effect.orDie)

    /** The user's answer to the pending authorization with this (normalized) user code. */
    const decide = (userCode: string, userId: UserId, decision: "approved" | "denied") =>
      Effect.gen(function*() {
        const [decided] = yield* sql<Pick<Grant, "clientId">>`UPDATE device_authorizations
          SET status = ${decision}, user_id = ${userId}
          WHERE user_code = ${userCode} AND status = 'pending' AND expires_at > now()
          RETURNING client_id AS "clientId"`
        if (decided !== undefined) return { _tag: "Decided", clientId: decided.clientId } satisfies Decision
        const [expired] = yield* sql`SELECT 1 FROM device_authorizations WHERE user_code = ${userCode} AND status = 'pending'`
        return (expired === undefined ? { _tag: "Unknown" } : { _tag: "Expired" }) satisfies Decision
      }).pipe(Effect.orDie)

    /** Who asks with the pending, unexpired authorization of this (normalized) user code, if any. */
    const findPending = (userCode: string) =>
      sql<Asking>`SELECT client_id AS "clientId", scope FROM device_authorizations
        WHERE user_code = ${userCode} AND status = 'pending' AND expires_at > now()`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie
      )

    return { create, recordPoll, redeem, decide, findPending } as const
  }),
  dependencies: [LoginsRepo.Default, DeviceLoginSettings.Default]
}) {}
