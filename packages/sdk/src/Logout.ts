import type { HttpClient } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import type { PostlineClient } from "@postline/domain"
import { Effect, Option } from "effect"
import { normalizeBaseUrl } from "./Credentials.js"
import { makePlainClient, type RetryOptions } from "./Retry.js"
import { TokenStore } from "./TokenStore.js"

export interface LogoutOptions {
  /** Retries of the revocation (see `RetryOptions`). */
  readonly retry?: RetryOptions | undefined
}

export type LogoutError = Effect.Effect.Error<ReturnType<PostlineClient["auth"]["revoke"]>> | PlatformError

/**
 * Ends the stored login on its own server (its refresh token revoked at /v1/auth/revoke, which ends the whole
 * login), then removes it from the store; nothing stored is nothing to do. It needs no credentials of its own, so
 * a login that is due, or that the server has ended already (the server answers that as done), is logged out
 * too. When the server cannot be told, the store keeps the login. Runs under the store's lock, so that no process
 * refreshes the login meanwhile.
 */
export const logout = (
  options: LogoutOptions = {}
): Effect.Effect<void, LogoutError, HttpClient.HttpClient | TokenStore> =>
  Effect.flatMap(TokenStore, (store) =>
    store.withLock(Effect.gen(function*() {
      const stored = yield* store.load
      if (Option.isNone(stored)) return
      const plain = yield* makePlainClient(normalizeBaseUrl(stored.value.baseUrl), options.retry)
      yield* plain.auth.revoke({ payload: { token: stored.value.refreshToken, token_type_hint: "refresh_token" } })
      yield* store.clear
    })))
