import { SqlClient } from "@effect/sql"
import type { DeviceCodeRequest, UserId } from "@postline/domain"
import { type Brand, Data, Effect, Redacted } from "effect"
import { generateSecret, hashSecret } from "../Users/Secrets.js"
import { DeviceLoginSettings } from "./Settings.js"

/** A login's id: the API never shows it, so it is branded here rather than in the domain. */
export type LoginId = Brand.Branded<string, "LoginId">

/** What an approved device authorization grants: a login of this user, for this client and scope. */
export interface Grant {
  readonly userId: UserId
  readonly clientId: typeof DeviceCodeRequest.Type["client_id"]
  readonly scope: string | null
}

export interface IssuedTokens {
  readonly accessToken: string
  readonly refreshToken: string
}

export type Refresh = Data.TaggedEnum<{
  Rotated: { readonly tokens: IssuedTokens }
  /** A rotated token came back: it leaked, or its successor did, so the whole login has been ended. */
  Reused: {}
  Refused: { readonly reason: string }
}>
export const Refresh = Data.taggedEnum<Refresh>()

/**
 * Logins and their tokens. A login is what one approved device authorization
 * grants; deleting its row ends its access and refresh tokens (ON DELETE CASCADE).
 */
export class LoginsRepo extends Effect.Service<LoginsRepo>()("LoginsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { accessTokenLifetimeSeconds, refreshTokenLifetimeSeconds } = yield* DeviceLoginSettings

    const inSeconds = (seconds: number) => sql`now() + make_interval(secs => ${seconds})`

    const issueTokens = (loginId: LoginId, userId: UserId) =>
      Effect.gen(function*() {
        const accessToken = generateSecret("accessToken")
        const refreshToken = generateSecret("refreshToken")
        yield* sql`INSERT INTO access_tokens (token_hash, user_id, login_id, expires_at)
          VALUES (${hashSecret(accessToken)}, ${userId}, ${loginId}, ${inSeconds(accessTokenLifetimeSeconds)})`
        yield* sql`INSERT INTO refresh_tokens (token_hash, login_id, expires_at)
          VALUES (${hashSecret(refreshToken)}, ${loginId}, ${inSeconds(refreshTokenLifetimeSeconds)})`
        return { accessToken, refreshToken }
      })

    /** Starts a login and issues its first tokens; runs in the caller's transaction. */
    const start = (grant: Grant) =>
      Effect.gen(function*() {
        const [login] = yield* sql<{ readonly id: LoginId }>`INSERT INTO logins (user_id, client_id, scope)
          VALUES (${grant.userId}, ${grant.clientId}, ${grant.scope}) RETURNING id`
        return yield* issueTokens(login.id, grant.userId)
      }).pipe(Effect.orDie)

    /**
     * Rotates a refresh token: a new pair, and the old token used up. A used token presented again ends its login,
     * whatever the client_id: whoever holds a leaked token must not learn it was rotated and keep the login alive.
     */
    const refresh = (refreshToken: Redacted.Redacted, clientId: Grant["clientId"]) =>
      Effect.gen(function*() {
        const tokenHash = hashSecret(Redacted.value(refreshToken))
        // Locked, so that of two refreshes with one token the second sees it used.
        const [found] = yield* sql<{
          readonly loginId: LoginId
          readonly userId: UserId
          readonly clientId: Grant["clientId"]
          readonly rotated: boolean
          readonly expired: boolean
        }>`SELECT r.login_id AS "loginId", l.user_id AS "userId", l.client_id AS "clientId", r.rotated_at IS NOT NULL AS rotated, r.expires_at <= now() AS expired
          FROM refresh_tokens r JOIN logins l ON l.id = r.login_id
          WHERE r.token_hash = ${tokenHash} FOR UPDATE OF r`
        if (found === undefined) return Refresh.Refused({ reason: "Unknown or revoked refresh token" })
        // Reuse first: a rotated token ends the login even when sent with another client_id.
        if (found.rotated) {
          yield* sql`DELETE FROM logins WHERE id = ${found.loginId}`
          return Refresh.Reused()
        }
        if (found.clientId !== clientId) return Refresh.Refused({ reason: "The refresh token was issued to another client" })
        if (found.expired) return Refresh.Refused({ reason: "The refresh token has expired: log in again" })
        yield* sql`UPDATE refresh_tokens SET rotated_at = now() WHERE token_hash = ${tokenHash}`
        return Refresh.Rotated({ tokens: yield* issueTokens(found.loginId, found.userId) })
      }).pipe(sql.withTransaction, Effect.orDie)

    /** Ends the login of an access or refresh token, or deletes a personal access token; unknown tokens change nothing. */
    const revoke = (token: Redacted.Redacted) =>
      Effect.gen(function*() {
        const tokenHash = hashSecret(Redacted.value(token))
        yield* sql`DELETE FROM logins WHERE id IN (
          SELECT login_id FROM access_tokens WHERE token_hash = ${tokenHash}
          UNION SELECT login_id FROM refresh_tokens WHERE token_hash = ${tokenHash})`
        yield* sql`DELETE FROM access_tokens WHERE token_hash = ${tokenHash}`
      }).pipe(sql.withTransaction, Effect.orDie)

    return { start, refresh, revoke } as const
  }),
  dependencies: [DeviceLoginSettings.Default]
}) {}
