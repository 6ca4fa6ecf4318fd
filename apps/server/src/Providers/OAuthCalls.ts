import { Effect, Schema } from "effect"
import * as oauth from "oauth4webapi"
import { outboundErrorIn } from "../Outbound/OutboundError.js"
import type { Outbound } from "../Outbound/Outbound.js"
import type { ProviderName } from "./Credentials.js"
import { fromOutbound, shortMessage } from "./Errors.js"
import { ProviderError } from "./SocialProvider.js"

/**
 * oauth4webapi's options for calls through the guarded outbound client. Plain http is let through to oauth4webapi
 * only where Outbound itself allows it (OUTBOUND_ALLOW_PRIVATE, or a test's loopback fake): Outbound refuses it
 * otherwise.
 */
export const oauthOptions = (outbound: Outbound) => ({
  [oauth.customFetch]: outbound.fetch,
  [oauth.allowInsecureRequests]: true
})


/**
 * A failure of an OAuth exchange as a provider error: a grant refused for good (`invalid_grant`, a person who
 * denied) is `auth`, which takes a reconnect; an unreachable or failing authorization server is `transient`.
 */
export const fromOAuthFailure = (provider: ProviderName) => (error: unknown): ProviderError => {
  const outbound = outboundErrorIn(error)
  if (outbound !== undefined) return fromOutbound(provider, outbound)
  if (error instanceof oauth.AuthorizationResponseError) {
    return new ProviderError({
      provider,
      category: "auth",
      retryable: false,
      providerMessage: error.error_description ? `${error.error}: ${error.error_description}` : error.error
    })
  }
  if (error instanceof oauth.ResponseBodyError) {
    // A refused client (this server's own client id or secret) is no refusal of the account: it takes the operator.
    const category = error.status === 429
      ? "rate_limited"
      : error.status >= 500
      ? "transient"
      : error.error === "invalid_grant"
      ? "auth"
      : "unknown"
    return new ProviderError({
      provider,
      category,
      retryable: category === "rate_limited" || category === "transient",
      providerStatus: error.status,
      providerMessage: error.error_description ? `${error.error}: ${error.error_description}` : error.error
    })
  }
  const status = (error as { cause?: unknown }).cause instanceof Response ? ((error as { cause: Response }).cause.status) : undefined
  const transient = status !== undefined && status >= 500
  return new ProviderError({
    provider,
    category: transient ? "transient" : "unknown",
    retryable: transient,
    ...(status !== undefined ? { providerStatus: status } : {}),
    providerMessage: shortMessage(error instanceof Error ? error.message : String(error), "The OAuth exchange failed")
  })
}

/** An exchange with a network's authorization server, its failures made provider errors. */
export const oauthCall = <A>(provider: ProviderName, run: () => Promise<A>) =>
  Effect.tryPromise({ try: run, catch: fromOAuthFailure(provider) })

/**
 * What a network's `authorize` left for its callback, read back. One that does not read (a connect started before an
 * upgrade changed its shape) fails the connect with a fixed message: the decoder's own would quote its secrets.
 */
export const readPending = <A, I>(provider: ProviderName, schema: Schema.Schema<A, I>, pending: string) =>
  Schema.decode(schema)(pending as I).pipe(
    Effect.mapError(() =>
      new ProviderError({
        provider,
        category: "unknown",
        retryable: false,
        providerMessage: "What this connect kept for the network's answer cannot be read: start connecting again"
      })
    )
  )
