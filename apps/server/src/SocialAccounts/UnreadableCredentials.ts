import { Effect, Layer } from "effect"
import { CredentialsCipher, unknownKeyMessage } from "../Providers/CredentialsCipher.js"
import { SocialAccountsRepo } from "./Repo.js"

/**
 * At start, connected accounts whose credentials were encrypted with a key this server does not have are
 * marked `reconnect_required`, with why in `lastError`, so that they say so before a publish fails; those it
 * marked so whose key it has again (the key was given back) are connected again. A ciphertext names its key,
 * so this reads no credentials. Records of a configured key that still cannot be read (altered) are found
 * when they are next used.
 */
export const UnreadableCredentialsLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const repo = yield* SocialAccountsRepo
    const cipher = yield* CredentialsCipher
    const { marked, restored } = yield* repo.markUnknownKeys(cipher.keyIds, unknownKeyMessage)
    for (const { count, keyId } of marked) {
      yield* Effect.logWarning(
        `${count} social account(s) have credentials encrypted with key ${keyId}, which is neither CREDENTIALS_KEY ` +
          "nor in CREDENTIALS_KEY_PREVIOUS: they are marked reconnect_required until they are reconnected (PATCH) " +
          "or the server is given that key again"
      )
    }
    if (restored > 0) {
      yield* Effect.logInfo(`${restored} social account(s) marked for an unknown credentials key can be read again: connected`)
    }
  })
).pipe(Layer.provide(SocialAccountsRepo.Default))
