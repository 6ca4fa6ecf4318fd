import type { SocialAccountId } from "@postline/domain"
import { Effect, Either } from "effect"
import { transactionally } from "../Database/Transaction.js"
import { CredentialsCipher } from "../Secrets/CredentialsCipher.js"
import { SocialAccountsRepo } from "./Repo.js"

/** Accounts per transaction: a rotation holds no more than this many in memory, or locked, at once. */
export const rotationBatchSize = 100

export interface RotationCounts {
  readonly reencrypted: number
  readonly alreadyCurrent: number
  readonly unreadable: number
}

/**
 * Re-encrypts every account's credentials with the current key, so that the previous keys can be dropped:
 * in batches in id order, each a transaction that locks its accounts (a change of credentials meanwhile
 * waits for it). Credentials that no configured key reads are counted, and their connected accounts marked
 * `reconnect_required` as the server marks them.
 */
export const rotateCredentials = Effect.gen(function*() {
  const repo = yield* SocialAccountsRepo
  const cipher = yield* CredentialsCipher

  const rotateBatch = (after: SocialAccountId | null) =>
    Effect.gen(function*() {
      const rows = yield* repo.lockCiphertexts(after, rotationBatchSize)
      const counts = { reencrypted: 0, alreadyCurrent: 0, unreadable: 0 }
      for (const { ciphertext, id } of rows) {
        if (cipher.isCurrent(ciphertext)) {
          counts.alreadyCurrent++
          continue
        }
        const plaintext = yield* Effect.either(cipher.decrypt(ciphertext))
        if (Either.isLeft(plaintext)) {
          counts.unreadable++
          yield* repo.markUnreadable(id, plaintext.left.message)
        } else {
          yield* repo.replaceCiphertext(id, yield* cipher.encrypt(plaintext.right))
          counts.reencrypted++
        }
      }
      return { counts, last: rows.at(-1)?.id ?? null }
    }).pipe(transactionally)

  const total = { reencrypted: 0, alreadyCurrent: 0, unreadable: 0 }
  let after: SocialAccountId | null = null
  do {
    // Counted once a batch has committed: a transaction that runs again is not counted twice.
    const { counts, last }: { counts: RotationCounts; last: SocialAccountId | null } = yield* rotateBatch(after)
    total.reencrypted += counts.reencrypted
    total.alreadyCurrent += counts.alreadyCurrent
    total.unreadable += counts.unreadable
    after = last
  } while (after !== null)
  return total as RotationCounts
}).pipe(Effect.provide(SocialAccountsRepo.Default))
