import { SqlClient } from "@effect/sql"
import type { ApiKeyId, ConnectId, OAuthProvider, OrganizationId, SocialAccountId, TeamId, User } from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc } from "../Database/Columns.js"

/** Who started a connect: the account is connected as them when the network sends the person back. */
export type Starter =
  | { readonly _tag: "User"; readonly user: User }
  | { readonly _tag: "ApiKey"; readonly apiKeyId: ApiKeyId; readonly organizationId: OrganizationId }

export interface ConnectRow {
  readonly id: ConnectId
  readonly teamId: TeamId
  readonly provider: OAuthProvider
  /** pending, connecting (the network sent the person back: it is being finished), connected or failed. */
  readonly status: "pending" | "connecting" | "connected" | "failed"
  readonly socialAccountId: SocialAccountId | null
  readonly error: string | null
  readonly returnTo: string | null
  readonly createdAt: string
  readonly expiresAt: string
  /** Whether expires_at has passed, by the database's clock. */
  readonly expired: boolean
  /** Whether it is 10 minutes past expires_at: a connect still being finished then was abandoned (a crash). */
  readonly abandoned: boolean
}

/** A connect the callback took: what finishing it needs. */
export interface ClaimedConnect extends ConnectRow {
  readonly pending: string
  readonly redirectUri: string
  readonly starter: Starter
}

/** The connects started for teams; each is found again, once, by the hash of its `state`. */
export class AccountConnectsRepo extends Effect.Service<AccountConnectsRepo>()("AccountConnectsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const columns = sql`c.id, c.team_id AS "teamId", c.provider, c.status, c.social_account_id AS "socialAccountId",
      c.error, c.return_to AS "returnTo", ${sql.unsafe(isoUtc("c.created_at"))} AS "createdAt",
      ${sql.unsafe(isoUtc("c.expires_at"))} AS "expiresAt", c.expires_at <= now() AS expired,
      c.expires_at + interval '10 minutes' <= now() AS abandoned`

    const insert = (input: {
      readonly teamId: TeamId
      readonly starter: Starter
      readonly provider: OAuthProvider
      readonly stateHash: string
      readonly pending: string
      readonly redirectUri: string
      readonly returnTo: string | null
      readonly lifetimeSeconds: number
    }) =>
      sql<ConnectRow>`INSERT INTO account_connects AS c
          (team_id, user_id, api_key_id, provider, state_hash, pending, redirect_uri, return_to, expires_at)
        VALUES (${input.teamId}, ${input.starter._tag === "User" ? input.starter.user.id : null},
          ${input.starter._tag === "ApiKey" ? input.starter.apiKeyId : null}, ${input.provider}, ${input.stateHash},
          ${input.pending}, ${input.redirectUri}, ${input.returnTo},
          now() + make_interval(secs => ${input.lifetimeSeconds}))
        RETURNING ${columns}`.pipe(
        Effect.map(([row]) => row),
        Effect.orDie,
        policyRequire("SocialAccount", "manage")
      )

    const find = (teamId: TeamId, id: ConnectId) =>
      sql<ConnectRow>`SELECT ${columns} FROM account_connects c WHERE c.team_id = ${teamId} AND c.id = ${id}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie,
        policyRequire("SocialAccount", "manage")
      )

    /**
     * Takes the pending, unexpired connect of this state and network for the callback, so that a state works once: a
     * second callback with it (a replay, a reload) finds it taken. Answers the connect as it was when none was taken.
     */
    const claim = (stateHash: string, provider: string) =>
      Effect.gen(function*() {
        const [claimed] = yield* sql<ClaimedConnect & { readonly userId: string | null; readonly email: string | null;
          readonly name: string | null; readonly apiKeyId: ApiKeyId | null; readonly organizationId: OrganizationId | null }>`
          WITH taken AS (
            UPDATE account_connects SET status = 'connecting'
            WHERE state_hash = ${stateHash} AND provider = ${provider} AND status = 'pending' AND expires_at > now()
            RETURNING *)
          SELECT ${columns}, c.pending, c.redirect_uri AS "redirectUri", u.id AS "userId", u.email, u.name,
            c.api_key_id AS "apiKeyId", k.organization_id AS "organizationId"
          FROM taken c LEFT JOIN users u ON u.id = c.user_id LEFT JOIN api_keys k ON k.id = c.api_key_id`
        if (claimed !== undefined) {
          const { apiKeyId, email, name, organizationId, userId, ...connect } = claimed
          const starter: Starter = userId !== null
            ? { _tag: "User", user: { id: userId as User["id"], email: email ?? "", name: name ?? "" } }
            : { _tag: "ApiKey", apiKeyId: apiKeyId!, organizationId: organizationId! }
          return { _tag: "Claimed", connect: { ...connect, starter } } as const
        }
        const [seen] = yield* sql<ConnectRow>`SELECT ${columns} FROM account_connects c
          WHERE c.state_hash = ${stateHash} AND c.provider = ${provider}`
        return seen === undefined ? { _tag: "Unknown" } as const : { _tag: "Taken", connect: seen } as const
      }).pipe(Effect.orDie)

    const markConnected = (id: ConnectId, socialAccountId: SocialAccountId) =>
      sql`UPDATE account_connects SET status = 'connected', social_account_id = ${socialAccountId},
          finished_at = now(), pending = '' WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    const markFailed = (id: ConnectId, error: string) =>
      sql`UPDATE account_connects SET status = 'failed', error = ${error}, finished_at = now(), pending = ''
        WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    /** Connects that ended, or expired, a day ago or more: nobody waits for them any more. */
    const forgetEnded = sql`DELETE FROM account_connects WHERE expires_at < now() - interval '1 day'`.pipe(
      Effect.asVoid,
      Effect.orDie
    )

    return { insert, find, claim, markConnected, markFailed, forgetEnded } as const
  })
}) {}
