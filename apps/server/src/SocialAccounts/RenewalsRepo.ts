import { SqlClient } from "@effect/sql"
import type { SocialAccountId, SocialProvider } from "@postline/domain"
import { Effect, Option } from "effect"

/** An account whose tokens this process renews now: no other process renews them until the claim ends. */
export interface ClaimedRenewal {
  readonly id: SocialAccountId
  readonly provider: SocialProvider
  readonly ciphertext: string
  readonly claim: string
  readonly failures: number
}

const claimedColumns = `id, provider, credentials AS ciphertext, renewal_claim AS claim, renewal_failures AS failures`

/**
 * The renewal of accounts' access tokens. A network that rotates refresh tokens revokes the grant when one is used
 * twice, so an account is renewed by one process at a time: it is claimed (rows taken FOR UPDATE SKIP LOCKED, then a
 * claim with an end), renewed outside any transaction, and what the network answered is stored under the same claim.
 * The server's own upkeep: no caller's policy applies.
 */
export class RenewalsRepo extends Effect.Service<RenewalsRepo>()("RenewalsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const claimable = sql`status = 'connected' AND token_expires_at IS NOT NULL
      AND (renewal_claimed_until IS NULL OR renewal_claimed_until < now())`

    /**
     * Up to `limit` accounts whose tokens expire within `aheadSeconds` (or within half their life, when that is
     * shorter: a network's short-lived tokens are not renewed at every look), and that may be tried now, claimed.
     */
    const claimDue = (aheadSeconds: number, claimSeconds: number, limit: number) =>
      sql<ClaimedRenewal>`UPDATE social_accounts SET renewal_claim = gen_random_uuid(),
          renewal_claimed_until = now() + make_interval(secs => ${claimSeconds})
        WHERE id IN (SELECT id FROM social_accounts
          WHERE ${claimable}
            AND token_expires_at <= now() + least(make_interval(secs => ${aheadSeconds}),
              coalesce((token_expires_at - token_issued_at) / 2, make_interval(secs => ${aheadSeconds})))
            AND (renewal_retry_at IS NULL OR renewal_retry_at <= now())
          ORDER BY token_expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
        RETURNING ${sql.unsafe(claimedColumns)}`.pipe(Effect.orDie)

    /** This account, claimed now; none while another process renews it. */
    const claimOne = (id: SocialAccountId, claimSeconds: number) =>
      sql<ClaimedRenewal>`UPDATE social_accounts SET renewal_claim = gen_random_uuid(),
          renewal_claimed_until = now() + make_interval(secs => ${claimSeconds})
        WHERE id IN (SELECT id FROM social_accounts WHERE id = ${id} AND ${claimable} FOR UPDATE SKIP LOCKED)
        RETURNING ${sql.unsafe(claimedColumns)}`.pipe(Effect.map(([row]) => Option.fromNullable(row)), Effect.orDie)

    /** The account's credentials as stored now, and whether a renewal of them is under way. */
    const current = (id: SocialAccountId) =>
      sql<{ readonly ciphertext: string; readonly renewing: boolean; readonly status: string }>`SELECT
          credentials AS ciphertext, status,
          coalesce(renewal_claimed_until >= now(), false) AS renewing
        FROM social_accounts WHERE id = ${id}`.pipe(Effect.map(([row]) => Option.fromNullable(row)), Effect.orDie)

    /** Renewed tokens, kept under the claim they were renewed with; the claim ends. */
    const storeRenewed = (renewal: ClaimedRenewal, ciphertext: string, expiresAt: Date | null) =>
      sql`UPDATE social_accounts SET credentials = ${ciphertext}, token_expires_at = ${expiresAt?.toISOString() ?? null},
          token_issued_at = now(),
          renewal_claim = NULL, renewal_claimed_until = NULL, renewal_failures = 0, renewal_retry_at = NULL,
          updated_at = now()
        WHERE id = ${renewal.id} AND renewal_claim = ${renewal.claim}`.pipe(Effect.asVoid, Effect.orDie)

    /** The network refused to renew for good: the account needs connecting again, and says how. */
    const markRefused = (renewal: ClaimedRenewal, message: string) =>
      sql`UPDATE social_accounts SET status = 'reconnect_required', last_error_category = 'auth',
          last_error_message = ${message}, last_error_at = now(), renewal_claim = NULL, renewal_claimed_until = NULL,
          updated_at = now()
        WHERE id = ${renewal.id} AND renewal_claim = ${renewal.claim}`.pipe(Effect.asVoid, Effect.orDie)

    /** A renewal that may pass later: tried again after `retrySeconds`, the failure recorded, the status kept. */
    const markFailed = (renewal: ClaimedRenewal, category: string, message: string, retrySeconds: number) =>
      sql`UPDATE social_accounts SET renewal_failures = renewal_failures + 1,
          renewal_retry_at = now() + make_interval(secs => ${retrySeconds}), last_error_category = ${category},
          last_error_message = ${message}, last_error_at = now(), renewal_claim = NULL, renewal_claimed_until = NULL
        WHERE id = ${renewal.id} AND renewal_claim = ${renewal.claim}`.pipe(Effect.asVoid, Effect.orDie)

    return { claimDue, claimOne, current, storeRenewed, markRefused, markFailed } as const
  })
}) {}
