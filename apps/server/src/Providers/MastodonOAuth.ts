import { Effect, Redacted, Schema } from "effect"
import * as oauth from "oauth4webapi"
import { Outbound } from "../Outbound/Outbound.js"
import type { OAuthClient } from "./Credentials.js"
import { fromOutbound, fromStatus, shortMessage } from "./Errors.js"
import { oauthCall, oauthOptions, readPending } from "./OAuthCalls.js"
import { OAuthClientsRepo } from "./OAuthClientsRepo.js"
import type { OAuthNetwork } from "./OAuthNetwork.js"

/** `read` for the profile and the analytics reads, and what publishing and deleting statuses with media take. */
const scopes = ["read", "write:statuses", "write:media"]

// docs.joinmastodon.org/methods/apps ("Create an application") and docs.joinmastodon.org/methods/oauth.
const RegisteredApp = Schema.Struct({ client_id: Schema.String, client_secret: Schema.String })
const decodeApp = Schema.decodeUnknown(Schema.parseJson(RegisteredApp))

const Pending = Schema.parseJson(Schema.Struct({
  instanceUrl: Schema.String,
  verifier: Schema.String,
  clientId: Schema.String,
  clientSecret: Schema.Redacted(Schema.String)
}))

/** A Mastodon instance as an authorization server: its endpoints are fixed paths (older servers publish no metadata). */
const authorizationServer = (instanceUrl: string): oauth.AuthorizationServer => {
  const origin = new URL(instanceUrl).origin
  return {
    issuer: origin,
    authorization_endpoint: `${origin}/oauth/authorize`,
    token_endpoint: `${origin}/oauth/token`,
    revocation_endpoint: `${origin}/oauth/revoke`
  }
}

/**
 * Mastodon by signing in: Postline registers itself as an app on each instance the first time one of its users
 * connects (kept in oauth_clients), then the authorization code flow with PKCE. Its tokens do not expire; removing
 * the account revokes the token.
 */
export class MastodonOAuth extends Effect.Service<MastodonOAuth>()("MastodonOAuth", {
  effect: Effect.gen(function*() {
    const outbound = yield* Outbound
    const clients = yield* OAuthClientsRepo
    const options = oauthOptions(outbound)

    const register = (origin: string, redirectUri: string) =>
      Effect.gen(function*() {
        const response = yield* outbound.request(`${origin}/api/v1/apps`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json" },
          body: JSON.stringify({ client_name: "Postline", redirect_uris: redirectUri, scopes: scopes.join(" ") })
        }).pipe(Effect.mapError((error) => fromOutbound("mastodon", error)))
        const text = new TextDecoder().decode(response.body)
        if (response.status < 200 || response.status > 299) {
          return yield* fromStatus({
            provider: "mastodon",
            status: response.status,
            header: (name) => response.headers.get(name),
            providerMessage: `The instance refused to register Postline as an app: ${shortMessage(text, response.statusText)}`,
            clientError: "unknown"
          })
        }
        const app = yield* Effect.orElseFail(decodeApp(text), () =>
          fromStatus({
            provider: "mastodon",
            status: response.status,
            header: () => null,
            providerMessage: `${new URL(origin).host} did not answer as a Mastodon server registering an app`,
            clientError: "unknown",
            category: "unknown"
          }))
        return { clientId: app.client_id, clientSecret: Redacted.make(app.client_secret) } satisfies OAuthClient
      })

    const network: OAuthNetwork<"mastodon"> = {
      provider: "mastodon",
      scopes,
      missingSettings: [],
      refreshes: false,
      authorize: ({ hints, redirectUri, state }) =>
        Effect.gen(function*() {
          const server = authorizationServer(hints.instanceUrl)
          const client = yield* clients.findOrRegister(
            { provider: "mastodon", server: server.issuer, redirectUri },
            register(server.issuer, redirectUri)
          )
          const verifier = oauth.generateRandomCodeVerifier()
          const challenge = yield* Effect.promise(() => oauth.calculatePKCECodeChallenge(verifier))
          const url = new URL(server.authorization_endpoint!)
          url.search = new URLSearchParams({
            client_id: client.clientId,
            redirect_uri: redirectUri,
            response_type: "code",
            scope: scopes.join(" "),
            state,
            code_challenge: challenge,
            code_challenge_method: "S256"
          }).toString()
          const pending = yield* Effect.orDie(Schema.encode(Pending)({
            instanceUrl: server.issuer,
            verifier,
            clientId: client.clientId,
            clientSecret: client.clientSecret
          }))
          return { authorizationUrl: url.toString(), pending }
        }),
      finish: ({ callbackUrl, pending, redirectUri, state }) =>
        Effect.gen(function*() {
          const { clientId, clientSecret, instanceUrl, verifier } = yield* readPending("mastodon", Pending, pending)
          // A server that names itself in the callback (RFC 9207, newer Mastodon) may write its origin with a slash.
          const named = callbackUrl.searchParams.get("iss")
          const server = {
            ...authorizationServer(instanceUrl),
            ...(named !== null && named.replace(/\/$/, "") === new URL(instanceUrl).origin ? { issuer: named } : {})
          }
          const client: oauth.Client = { client_id: clientId }
          const authentication = oauth.ClientSecretPost(Redacted.value(clientSecret))
          const tokens = yield* oauthCall("mastodon", async () => {
            const parameters = oauth.validateAuthResponse(server, client, callbackUrl, state)
            const response = await oauth.authorizationCodeGrantRequest(
              server, client, authentication, parameters, redirectUri, verifier, options
            )
            return oauth.processAuthorizationCodeResponse(server, client, response)
          })
          return {
            provider: "mastodon" as const,
            instanceUrl,
            accessToken: Redacted.make(tokens.access_token),
            oauthClient: { clientId, clientSecret }
          }
        }),
      expiresAt: () => null,
      refresh: Effect.succeed,
      revoke: (credentials) =>
        credentials.oauthClient === undefined
          ? Effect.void
          : oauthCall("mastodon", async () => {
            const server = authorizationServer(credentials.instanceUrl)
            const client: oauth.Client = { client_id: credentials.oauthClient!.clientId }
            const authentication = oauth.ClientSecretPost(Redacted.value(credentials.oauthClient!.clientSecret))
            const response = await oauth.revocationRequest(
              server, client, authentication, Redacted.value(credentials.accessToken), options
            )
            await oauth.processRevocationResponse(response)
          })
    }
    return network
  }),
  dependencies: [OAuthClientsRepo.Default]
}) {}
