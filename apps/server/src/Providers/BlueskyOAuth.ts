import { Effect, Redacted, Schema } from "effect"
import {
  type AtprotoOAuth,
  BlueskyOAuthClients,
  BlueskyOAuthSettings,
  blueskyScope,
  clientMetadataPath,
  jsonRows
} from "./BlueskyOAuthClient.js"
import type { CredentialsOf } from "./Credentials.js"
import { outboundErrorIn } from "../Outbound/OutboundError.js"
import { fromOutbound } from "./Errors.js"
import { readPending } from "./OAuthCalls.js"
import type { OAuthNetwork } from "./OAuthNetwork.js"
import { ProviderError } from "./SocialProvider.js"

// What authorize leaves for the callback: the client's own state row, under the state it put in the URL.
const Pending = Schema.parseJson(Schema.Struct({ state: Schema.String, row: Schema.String, redirectUri: Schema.String }))
const SessionRow = Schema.parseJson(Schema.Struct({ tokenSet: Schema.Struct({ expires_at: Schema.optional(Schema.String) }) }))


/** A failure of the atproto OAuth client: a refusal for good (denied, refresh token revoked or replayed) is `auth`. */
const failure = (module: AtprotoOAuth) => (error: unknown): ProviderError => {
  const outbound = outboundErrorIn(error)
  if (outbound !== undefined) return fromOutbound("bluesky", outbound)
  const refused = error instanceof module.TokenRefreshError || error instanceof module.TokenRevokedError ||
    error instanceof module.TokenInvalidError || error instanceof module.OAuthCallbackError
  const message = error instanceof Error ? error.message : String(error)
  return new ProviderError({
    provider: "bluesky",
    category: refused ? "auth" : "transient",
    retryable: !refused,
    providerMessage: error instanceof module.OAuthCallbackError && error.params.get("error")
      ? `${error.params.get("error")}: ${error.params.get("error_description") ?? message}`
      : message
  })
}

const signedIn = (credentials: CredentialsOf<"bluesky">) => "oauthSession" in credentials ? credentials : null

/**
 * Bluesky by signing in at the account's PDS (atproto OAuth: PAR, DPoP, PKCE) with @atproto/oauth-client-node. The
 * client's state and session rows are kept by Postline, encrypted (the connect's, then the account's credentials);
 * app passwords keep working beside it.
 */
export class BlueskyOAuth extends Effect.Service<BlueskyOAuth>()("BlueskyOAuth", {
  effect: Effect.gen(function*() {
    const clients = yield* BlueskyOAuthClients
    const settings = yield* BlueskyOAuthSettings

    const run = <A>(use: (module: AtprotoOAuth) => Promise<A>) =>
      Effect.flatMap(clients.module, (module) => Effect.tryPromise({ try: () => use(module), catch: failure(module) }))

    const sessionOf = (session: { readonly did: string; readonly redirectUri: string; readonly oauthSession: Redacted.Redacted<string> }) =>
      Effect.gen(function*() {
        const sessions = jsonRows([[session.did, Redacted.value(session.oauthSession)]])
        const client = yield* clients.client(session.redirectUri, jsonRows(), sessions)
        return { client, sessions }
      })

    const network: OAuthNetwork<"bluesky"> = {
      provider: "bluesky",
      scopes: blueskyScope.split(" "),
      // A public server signs in as a web client, which needs its key; without PUBLIC_URL, the loopback client.
      missingSettings: settings.publicOrigin !== null && settings.privateKey === null ? ["BLUESKY_OAUTH_PRIVATE_KEY"] : [],
      refreshes: true,
      publishedDocument: { path: clientMetadataPath, document: clients.metadata },
      authorize: ({ hints, redirectUri }) =>
        Effect.gen(function*() {
          if (!clients.web && !/^http:\/\/127\.0\.0\.1(:\d+)?\//.test(redirectUri)) {
            return yield* new ProviderError({
              provider: "bluesky",
              category: "unknown",
              retryable: false,
              providerMessage: "this server is not reached at 127.0.0.1, so it signs in to Bluesky as a web client, " +
                "which needs PUBLIC_URL (https) and BLUESKY_OAUTH_PRIVATE_KEY"
            })
          }
          const state = jsonRows()
          const client = yield* clients.client(redirectUri, state, jsonRows())
          const url = yield* run(() => client.authorize(hints.handle, { scope: blueskyScope }))
          const [[key, row]] = [...state.rows]
          const pending = yield* Effect.orDie(Schema.encode(Pending)({ state: key, row, redirectUri }))
          return { authorizationUrl: url.toString(), pending, state: key }
        }),
      finish: ({ callbackUrl, pending }) =>
        Effect.gen(function*() {
          const { redirectUri, row, state } = yield* readPending("bluesky", Pending, pending)
          const sessions = jsonRows()
          const client = yield* clients.client(redirectUri, jsonRows([[state, row]]), sessions)
          const { session } = yield* run(() => client.callback(callbackUrl.searchParams))
          return {
            provider: "bluesky" as const,
            did: session.did,
            redirectUri,
            oauthSession: Redacted.make(sessions.rows.get(session.did)!)
          }
        }),
      expiresAt: (credentials) => {
        const session = signedIn(credentials)
        if (session === null) return null
        const expiresAt = Schema.decodeOption(SessionRow)(Redacted.value(session.oauthSession))
        return expiresAt._tag === "Some" && expiresAt.value.tokenSet.expires_at ? new Date(expiresAt.value.tokenSet.expires_at) : null
      },
      refresh: (credentials) =>
        Effect.gen(function*() {
          const session = signedIn(credentials)
          if (session === null) return credentials
          const { client, sessions } = yield* sessionOf(session)
          yield* run(() => client.restore(session.did, true))
          return { ...session, oauthSession: Redacted.make(sessions.rows.get(session.did)!) }
        }),
      revoke: (credentials) =>
        Effect.gen(function*() {
          const session = signedIn(credentials)
          if (session === null) return
          const { client } = yield* sessionOf(session)
          yield* run(() => client.revoke(session.did))
        })
    }
    return network
  }),
  dependencies: [BlueskyOAuthClients.Default]
}) {}
