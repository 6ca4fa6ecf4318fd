import { Effect, Layer } from "effect"
import { CredentialsCipher, unknownKeyMessage } from "../Secrets/CredentialsCipher.js"
import { StartupError } from "../StartupError.js"
import { SocialAccountsRepo } from "./Repo.js"

/**
 * Why a process refuses stored credentials of keys it lacks, in one line: the key ids the data uses, the ones
 * the process has, and the two ways out (the key, or the operator's word that it is lost).
 */
export const missingKeysMessage = (
  missing: ReadonlyArray<{ readonly keyId: string; readonly count: number }>,
  cipher: Pick<CredentialsCipher, "keyId" | "keyIds">
) => {
  const used = missing.map(({ count, keyId }) => `${keyId} (${count} account${count === 1 ? "" : "s"})`).join(", ")
  const previous = cipher.keyIds.filter((keyId) => keyId !== cipher.keyId)
  const has = `${cipher.keyId} (current)${previous.length > 0 ? `, ${previous.join(", ")} (previous)` : ""}`
  const forget = missing.map(({ keyId }) => `\`pnpm admin credentials forget-key ${keyId}\``).join(", ")
  return `Stored social account credentials were encrypted with key ${used}, which this process does not have: ` +
    `it has ${has}. Give it that key (CREDENTIALS_KEY, or in CREDENTIALS_KEY_PREVIOUS) as the other processes ` +
    `have it; if the key is lost, declare it so with ${forget}, which marks its accounts reconnect_required`
}

/**
 * At start, before anything reads credentials: stored credentials of a key this process lacks stop the start
 * (StartupError), unless the operator declared that key lost (`pnpm admin credentials forget-key`). Another
 * process may have the key, and marking its accounts here would stop them publishing for every process.
 * Accounts of a key declared lost that this process has again (the key was given back) are connected again.
 * A ciphertext names its key, so this reads no credentials.
 */
export const CredentialsKeysCheckLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const repo = yield* SocialAccountsRepo
    const cipher = yield* CredentialsCipher
    const missing = yield* repo.unknownKeys(cipher.keyIds, unknownKeyMessage)
    if (missing.length > 0) return yield* new StartupError({ message: missingKeysMessage(missing, cipher) })
    const restored = yield* repo.restoreKnownKeys(cipher.keyIds, unknownKeyMessage)
    if (restored > 0) {
      yield* Effect.logInfo(`${restored} social account(s) of a credentials key declared lost can be read again: connected`)
    }
  })
).pipe(Layer.provide(SocialAccountsRepo.Default))
