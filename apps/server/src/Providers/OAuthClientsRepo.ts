import { SqlClient } from "@effect/sql"
import { Effect, Option, Redacted } from "effect"
import { CredentialsCipher } from "../Secrets/CredentialsCipher.js"
import type { OAuthClient } from "./Credentials.js"

/** Where an app is registered: a network's server (an instance's origin) for one redirect address. */
export interface ClientKey {
  readonly provider: string
  readonly server: string
  readonly redirectUri: string
}

/**
 * The apps Postline registered on networks' servers, their secrets encrypted. One the server cannot read (its key
 * was dropped after a rotation) counts as none: the app is registered again, and the new one replaces it.
 */
export class OAuthClientsRepo extends Effect.Service<OAuthClientsRepo>()("OAuthClientsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cipher = yield* CredentialsCipher

    const find = (key: ClientKey) =>
      Effect.gen(function*() {
        const [row] = yield* sql<{ readonly clientId: string; readonly clientSecret: string }>`
          SELECT client_id AS "clientId", client_secret AS "clientSecret" FROM oauth_clients
          WHERE provider = ${key.provider} AND server = ${key.server} AND redirect_uri = ${key.redirectUri}`
        if (row === undefined) return Option.none<OAuthClient>()
        return yield* cipher.decrypt(row.clientSecret).pipe(
          Effect.map((secret) => Option.some<OAuthClient>({ clientId: row.clientId, clientSecret: Redacted.make(secret) })),
          Effect.catchTag("CredentialsUnreadable", () => Effect.succeedNone)
        )
      }).pipe(Effect.orDie)

    /** Keeps a newly registered app; of two registered at once, the first kept is answered to both. */
    const keep = (key: ClientKey, client: OAuthClient, replacing: boolean) =>
      Effect.gen(function*() {
        const secret = yield* cipher.encrypt(Redacted.value(client.clientSecret))
        yield* replacing
          ? sql`UPDATE oauth_clients SET client_id = ${client.clientId}, client_secret = ${secret}, created_at = now()
              WHERE provider = ${key.provider} AND server = ${key.server} AND redirect_uri = ${key.redirectUri}`
          : sql`INSERT INTO oauth_clients (provider, server, redirect_uri, client_id, client_secret)
              VALUES (${key.provider}, ${key.server}, ${key.redirectUri}, ${client.clientId}, ${secret})
              ON CONFLICT DO NOTHING`
        return Option.getOrElse(yield* find(key), () => client)
      }).pipe(Effect.orDie)

    const exists = (key: ClientKey) =>
      sql<{ readonly found: number }>`SELECT 1 AS found FROM oauth_clients
        WHERE provider = ${key.provider} AND server = ${key.server} AND redirect_uri = ${key.redirectUri}`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    /** The app registered for `key`, registering one with `register` the first time (or when unreadable). */
    const findOrRegister = <E>(key: ClientKey, register: Effect.Effect<OAuthClient, E>) =>
      Effect.gen(function*() {
        const found = yield* find(key)
        if (Option.isSome(found)) return found.value
        const replacing = yield* exists(key)
        return yield* keep(key, yield* register, replacing)
      })

    return { findOrRegister } as const
  })
}) {}
