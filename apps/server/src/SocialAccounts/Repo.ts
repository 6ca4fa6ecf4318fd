import { SqlClient } from "@effect/sql"
import type {
  ProviderErrorCategory,
  SocialAccount,
  SocialAccountId,
  SocialAccountListQuery,
  SocialProvider,
  TeamId
} from "@postline/domain"
import { Effect, Option } from "effect"
import { policyRequire } from "../Access/Authorization.js"
import { isoUtc, selectFields } from "../Database/Columns.js"
import { type PageRequest, paginate, type SortColumns } from "../Pagination/Keyset.js"
import type { ContentLimits, Profile } from "../Providers/SocialProvider.js"
import { decodePublishingAccount, publishingAccountJson } from "./PublishingAccount.js"

const sortColumns: SortColumns = {
  createdAt: "a.created_at",
  updatedAt: "a.updated_at",
  name: "a.handle",
  id: "a.id"
}

/** An account's stored credentials (one ciphertext) and the limits its provider set when they were checked. */
export interface StoredCredentials {
  readonly account: SocialAccount
  readonly ciphertext: string
  readonly contentLimits: ContentLimits
}

/** What a check of the credentials found: the profile, or the provider's refusal. */
export type CheckOutcome =
  | { readonly _tag: "Verified"; readonly profile: Profile }
  | { readonly _tag: "Failed"; readonly category: ProviderErrorCategory; readonly message: string }

export class SocialAccountsRepo extends Effect.Service<SocialAccountsRepo>()("SocialAccountsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    // The exact JSON form of SocialAccount: rows are sent as they come.
    const columns = selectFields<SocialAccount>(sql, {
      id: "a.id",
      teamId: "a.team_id",
      provider: "a.provider",
      handle: "a.handle",
      displayName: "a.display_name",
      avatarUrl: "a.avatar_url",
      profileUrl: "a.profile_url",
      status: "a.status",
      lastError: `CASE WHEN a.last_error_at IS NULL THEN NULL ELSE json_build_object(
        'category', a.last_error_category, 'message', a.last_error_message, 'at', ${isoUtc("a.last_error_at")}) END`,
      createdAt: isoUtc("a.created_at"),
      updatedAt: isoUtc("a.updated_at")
    })

    const list = (teamId: TeamId, filters: Pick<SocialAccountListQuery, "provider" | "status">, request: PageRequest) =>
      paginate<SocialAccount>({
        sql,
        request,
        columns: sortColumns,
        idOf: (account) => account.id,
        sortValueOf: (account, field) => field === "name" ? account.handle : account[field],
        select: columns,
        rowsFrom: sql`FROM social_accounts a WHERE a.team_id = ${teamId}
          ${filters.provider === undefined ? sql`` : sql`AND a.provider = ${filters.provider}`}
          ${filters.status === undefined ? sql`` : sql`AND a.status = ${filters.status}`}`
      }).pipe(Effect.orDie, policyRequire("SocialAccount", "read"))

    const find = (teamId: TeamId, id: SocialAccountId) =>
      sql<SocialAccount>`SELECT ${columns} FROM social_accounts a WHERE a.team_id = ${teamId} AND a.id = ${id}`.pipe(
        Effect.map(([row]) => Option.fromNullable(row)),
        Effect.orDie,
        policyRequire("SocialAccount", "read")
      )

    const findCredentials = (teamId: TeamId, id: SocialAccountId) =>
      sql<SocialAccount & { readonly ciphertext: string; readonly contentLimits: ContentLimits }>`SELECT ${columns},
          a.credentials AS ciphertext, a.content_limits AS "contentLimits"
        FROM social_accounts a WHERE a.team_id = ${teamId} AND a.id = ${id}`.pipe(
        Effect.map(([row]) =>
          Option.map(Option.fromNullable(row), ({ ciphertext, contentLimits, ...account }): StoredCredentials => ({
            account,
            ciphertext,
            contentLimits
          }))
        ),
        Effect.orDie,
        policyRequire("SocialAccount", "manage")
      )

    const profileColumns = (profile: Profile) =>
      sql`handle = ${profile.handle}, display_name = ${profile.displayName}, avatar_url = ${profile.avatarUrl},
        profile_url = ${profile.profileUrl}, content_limits = ${JSON.stringify(profile.limits)}::json,
        network_user_id = ${profile.networkUserId}`

    const insert = (input: {
      readonly teamId: TeamId
      readonly provider: SocialProvider
      readonly profile: Profile
      readonly ciphertext: string
      /** When the access token in the credentials expires (a network that renews them); null where it does not. */
      readonly tokenExpiresAt?: Date | null
    }) =>
      sql<SocialAccount>`INSERT INTO social_accounts AS a
          (team_id, provider, handle, display_name, avatar_url, profile_url, credentials, content_limits,
            network_user_id, token_expires_at, token_issued_at)
        VALUES (${input.teamId}, ${input.provider}, ${input.profile.handle}, ${input.profile.displayName},
          ${input.profile.avatarUrl}, ${input.profile.profileUrl}, ${input.ciphertext},
          ${JSON.stringify(input.profile.limits)}::json, ${input.profile.networkUserId},
          ${input.tokenExpiresAt?.toISOString() ?? null}, now())
        RETURNING ${columns}`.pipe(Effect.map(([row]) => row), Effect.orDie, policyRequire("SocialAccount", "manage"))

    /**
     * New credentials that the provider accepted: the account is connected again. A renewal of the old ones under
     * way loses its claim, so that what it stores cannot overwrite these.
     */
    const replaceCredentials = (id: SocialAccountId, profile: Profile, ciphertext: string, tokenExpiresAt: Date | null = null) =>
      sql<SocialAccount>`UPDATE social_accounts a SET ${profileColumns(profile)}, credentials = ${ciphertext},
          status = 'connected', last_error_category = NULL, last_error_message = NULL, last_error_at = NULL,
          token_expires_at = ${tokenExpiresAt?.toISOString() ?? null}, token_issued_at = now(), renewal_failures = 0, renewal_retry_at = NULL,
          renewal_claim = NULL, renewal_claimed_until = NULL, updated_at = now()
        WHERE a.id = ${id} RETURNING ${columns}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie,
        policyRequire("SocialAccount", "manage")
      )

    /**
     * What a check found: a verified profile connects the account; a refusal of the credentials (`auth`)
     * asks for a reconnection; any other failure is recorded and leaves the status as it was.
     */
    const recordCheck = (id: SocialAccountId, outcome: CheckOutcome) =>
      (outcome._tag === "Verified"
        ? sql<SocialAccount>`UPDATE social_accounts a SET ${profileColumns(outcome.profile)}, status = 'connected',
            last_error_category = NULL, last_error_message = NULL, last_error_at = NULL, updated_at = now()
          WHERE a.id = ${id} RETURNING ${columns}`
        : sql<SocialAccount>`UPDATE social_accounts a SET
            status = ${outcome.category === "auth" ? "reconnect_required" : sql`a.status`},
            last_error_category = ${outcome.category}, last_error_message = ${outcome.message},
            last_error_at = now(), updated_at = now()
          WHERE a.id = ${id} RETURNING ${columns}`).pipe(
          Effect.map((rows) => Option.fromNullable(rows[0])),
          Effect.orDie,
          policyRequire("SocialAccount", "manage")
        )

    const remove = (teamId: TeamId, id: SocialAccountId) =>
      sql<SocialAccount>`DELETE FROM social_accounts a WHERE a.team_id = ${teamId} AND a.id = ${id}
        RETURNING ${columns}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0])),
        Effect.orDie,
        policyRequire("SocialAccount", "manage")
      )

    /**
     * The team's account of this network user: connecting them again updates it. Until the transaction ends, the
     * user is locked for the team (an advisory lock, there being no row to lock the first time), so that two
     * connects of one user at once make one account.
     */
    const findNetworkUser = (teamId: TeamId, provider: SocialProvider, profile: Profile & { readonly networkUserId: string }) =>
      sql`SELECT pg_advisory_xact_lock(hashtextextended(${`${teamId} ${provider} ${profile.networkUserId}`}, 0))`.pipe(
        // An account connected before its network user was recorded is found by its handle.
        Effect.zipRight(sql<{ readonly id: SocialAccountId }>`SELECT id FROM social_accounts
          WHERE team_id = ${teamId} AND provider = ${provider} AND (network_user_id = ${profile.networkUserId}
            OR (network_user_id IS NULL AND handle = ${profile.handle}))
          ORDER BY network_user_id IS NULL, created_at LIMIT 1`),
        Effect.map(([row]) => Option.map(Option.fromNullable(row), ({ id }) => id)),
        Effect.orDie,
        policyRequire("SocialAccount", "manage")
      )

    /** Which of these ids are accounts of the team. */
    const idsOfTeam = (teamId: TeamId, ids: ReadonlyArray<SocialAccountId>) =>
      (ids.length === 0
        ? Effect.succeed(new Set<string>())
        : sql<{ readonly id: SocialAccountId }>`SELECT id FROM social_accounts
            WHERE team_id = ${teamId} AND id IN ${sql.in(ids)}`.pipe(Effect.map((rows) => new Set<string>(rows.map((row) => row.id))))
      ).pipe(Effect.orDie, policyRequire("Post", "write"))

    /** What publishing to these accounts of the team takes: provider, status, credentials and limits. */
    const forPublishing = (teamId: TeamId, ids: ReadonlyArray<SocialAccountId>) =>
      sql<{ readonly account: unknown }>`SELECT ${publishingAccountJson(sql, "a")} AS account
        FROM social_accounts a WHERE a.team_id = ${teamId} AND a.id IN ${sql.in(ids)}`.pipe(
        Effect.orDie,
        Effect.flatMap(Effect.forEach(({ account }) => decodePublishingAccount(account))),
        Effect.map((accounts) => accounts.filter((account) => account !== null)),
        policyRequire("Post", "publish")
      )

    /** The provider refused the credentials while publishing: the account needs reconnecting. */
    const recordAuthFailure = (id: SocialAccountId, message: string) =>
      sql`UPDATE social_accounts SET status = 'reconnect_required', last_error_category = 'auth',
          last_error_message = ${message}, last_error_at = now(), updated_at = now()
        WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie, policyRequire("Post", "publish"))

    // The server's own upkeep of stored credentials, which no caller asks for: no policy applies.

    /**
     * How many accounts per key id have credentials encrypted with none of `keyIds`, leaving out those declared
     * lost (marked `reconnect_required` with `lostMessage` by `markLostKey`).
     */
    const unknownKeys = (keyIds: ReadonlyArray<string>, lostMessage: string) =>
      sql<{ readonly keyId: string; readonly count: number }>`SELECT split_part(credentials, '.', 2) AS "keyId",
          count(*)::int AS count
        FROM social_accounts
        WHERE split_part(credentials, '.', 2) NOT IN ${sql.in(keyIds)}
          AND NOT (status = 'reconnect_required' AND last_error_message IS NOT DISTINCT FROM ${lostMessage})
        GROUP BY 1 ORDER BY 1`.pipe(Effect.orDie)

    /**
     * Accounts whose credentials were encrypted with key `keyId`, declared lost by the operator, need reconnecting,
     * with `message` as their last error. Answers how many were marked, and how many use that key at all.
     */
    const markLostKey = (keyId: string, message: string) =>
      sql<{ readonly marked: number; readonly total: number }>`WITH marked AS (
          UPDATE social_accounts SET status = 'reconnect_required', last_error_category = 'auth',
            last_error_message = ${message}, last_error_at = now(), updated_at = now()
          WHERE split_part(credentials, '.', 2) = ${keyId}
            AND NOT (status = 'reconnect_required' AND last_error_message IS NOT DISTINCT FROM ${message})
          RETURNING 1)
        SELECT (SELECT count(*)::int FROM marked) AS marked,
          (SELECT count(*)::int FROM social_accounts WHERE split_part(credentials, '.', 2) = ${keyId}) AS total`.pipe(
          Effect.map(([row]) => row),
          Effect.orDie
        )

    /** Accounts marked with `message` (a key declared lost) whose key is among `keyIds` again are connected again. */
    const restoreKnownKeys = (keyIds: ReadonlyArray<string>, message: string) =>
      sql<{ readonly count: number }>`WITH restored AS (
          UPDATE social_accounts SET status = 'connected', last_error_category = NULL, last_error_message = NULL,
            last_error_at = NULL, updated_at = now()
          WHERE status = 'reconnect_required' AND last_error_message = ${message}
            AND split_part(credentials, '.', 2) IN ${sql.in(keyIds)}
          RETURNING 1)
        SELECT count(*)::int AS count FROM restored`.pipe(Effect.map(([row]) => row.count), Effect.orDie)

    /** Up to `limit` accounts' ciphertexts after `afterId` in id order, locked until the transaction ends. */
    const lockCiphertexts = (afterId: SocialAccountId | null, limit: number) =>
      sql<{ readonly id: SocialAccountId; readonly ciphertext: string }>`SELECT id, credentials AS ciphertext
        FROM social_accounts ${afterId === null ? sql`` : sql`WHERE id > ${afterId}`}
        ORDER BY id LIMIT ${limit} FOR UPDATE`.pipe(Effect.orDie)

    /** The same credentials under another ciphertext: nothing an account's users see changes. */
    const replaceCiphertext = (id: SocialAccountId, ciphertext: string) =>
      sql`UPDATE social_accounts SET credentials = ${ciphertext} WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

    /** A connected account whose credentials cannot be read needs reconnecting, and says why. */
    const markUnreadable = (id: SocialAccountId, message: string) =>
      sql`UPDATE social_accounts SET status = 'reconnect_required', last_error_category = 'auth',
          last_error_message = ${message}, last_error_at = now(), updated_at = now()
        WHERE id = ${id} AND status = 'connected'`.pipe(Effect.asVoid, Effect.orDie)

    return {
      list,
      find,
      findCredentials,
      insert,
      findNetworkUser,
      replaceCredentials,
      recordCheck,
      remove,
      idsOfTeam,
      forPublishing,
      recordAuthFailure,
      unknownKeys,
      markLostKey,
      restoreKnownKeys,
      lockCiphertexts,
      replaceCiphertext,
      markUnreadable,
      columns
    } as const
  })
}) {}
