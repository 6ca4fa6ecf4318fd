import { Clock, Effect, Redacted, Schema } from "effect"
import * as oauth from "oauth4webapi"
import { Outbound } from "../Outbound/Outbound.js"
import type { CredentialsOf } from "./Credentials.js"
import { fromOAuthFailure, oauthOptions, readPending } from "./OAuthCalls.js"
import type { OAuthNetwork } from "./OAuthNetwork.js"
import { ProviderError } from "./SocialProvider.js"
import { XClient } from "./XClient.js"
import { XSettings } from "./XSettings.js"

/**
 * Reading and posting (media included) as the person, and `offline.access` for a refresh token: without it X's
 * access token dies after two hours for good (docs.x.com/resources/fundamentals/authentication/oauth-2-0/authorization-code).
 */
const scopes = ["tweet.read", "tweet.write", "users.read", "media.write", "offline.access"]

const Pending = Schema.parseJson(Schema.Struct({ verifier: Schema.String }))

const Me = Schema.Struct({ data: Schema.Struct({ id: Schema.String }) })

// X answers a spent or unknown code or refresh token with `invalid_request` and these words, where OAuth says
// `invalid_grant`: the grant is gone either way.
const spentGrant = /^Value passed for the (token|authorization code) was invalid/i

const failure = (error: unknown): ProviderError =>
  error instanceof oauth.ResponseBodyError && error.error === "invalid_request" && spentGrant.test(error.error_description ?? "")
    ? new ProviderError({
      provider: "x",
      category: "auth",
      retryable: false,
      providerStatus: error.status,
      providerMessage: `${error.error}: ${error.error_description}`
    })
    : fromOAuthFailure("x")(error)

const call = <A>(run: () => Promise<A>) => Effect.tryPromise({ try: run, catch: failure })

/**
 * HTTP Basic as X's documentation shows it: base64 of `client_id:client_secret` as they are (its example's secret
 * holds a `-`). oauth4webapi's ClientSecretBasic form-encodes both first (RFC 6749 2.3.1), `-` and `_` included.
 */
const basicAsX = (clientSecret: string): oauth.ClientAuth => (_server, client, _body, headers) => {
  headers.set("authorization", `Basic ${Buffer.from(`${client.client_id}:${clientSecret}`).toString("base64")}`)
}

/**
 * X by signing in (docs.x.com/resources/fundamentals/authentication/oauth-2-0/user-access-token): the
 * authorization code flow with PKCE as a confidential client (HTTP Basic at the token endpoints). X publishes no
 * metadata, so its endpoints are written here. Access tokens live two hours; each refresh rotates the refresh token.
 */
export class XOAuth extends Effect.Service<XOAuth>()("XOAuth", {
  effect: Effect.gen(function*() {
    const settings = yield* XSettings
    const outbound = yield* Outbound
    const { call: callApi } = yield* XClient
    const options = oauthOptions(outbound)
    const server: oauth.AuthorizationServer = {
      issuer: new URL(settings.authorizeUrl).origin,
      authorization_endpoint: settings.authorizeUrl,
      token_endpoint: `${settings.apiUrl}/2/oauth2/token`,
      revocation_endpoint: `${settings.apiUrl}/2/oauth2/revoke`
    }
    const missingSettings = [
      ...(settings.clientId === null ? ["X_CLIENT_ID"] : []),
      ...(settings.clientSecret === null ? ["X_CLIENT_SECRET"] : [])
    ]

    /** The app's identity at X, or why this server cannot connect X accounts. */
    const app = Effect.suspend(() =>
      settings.clientId === null || settings.clientSecret === null
        ? Effect.fail(
          new ProviderError({
            provider: "x",
            category: "unknown",
            retryable: false,
            providerMessage: `X is not set up on this server: ${missingSettings.join(" and ")} missing`
          })
        )
        : Effect.succeed({
          client: { client_id: settings.clientId } satisfies oauth.Client,
          authentication: basicAsX(Redacted.value(settings.clientSecret))
        })
    )

    /** Credentials from a token answer; a refresh that brings no new refresh token leaves the one before. */
    const credentialsOf = (tokens: oauth.TokenEndpointResponse, userId: string, previousRefresh: Redacted.Redacted<string> | null) =>
      Effect.map(Clock.currentTimeMillis, (now): CredentialsOf<"x"> => ({
        provider: "x",
        userId,
        accessToken: Redacted.make(tokens.access_token),
        refreshToken: tokens.refresh_token === undefined ? previousRefresh : Redacted.make(tokens.refresh_token),
        expiresAt: tokens.expires_in === undefined ? null : new Date(now + tokens.expires_in * 1000).toISOString(),
        scope: tokens.scope ?? scopes.join(" ")
      }))

    const network: OAuthNetwork<"x"> = {
      provider: "x",
      scopes,
      missingSettings,
      refreshes: true,
      authorize: ({ redirectUri, state }) =>
        Effect.gen(function*() {
          const { client } = yield* app
          const verifier = oauth.generateRandomCodeVerifier()
          const challenge = yield* Effect.promise(() => oauth.calculatePKCECodeChallenge(verifier))
          const url = new URL(server.authorization_endpoint!)
          // Spaces as %20, as X's own examples write the scope (URLSearchParams would write +).
          url.search = new URLSearchParams({
            response_type: "code",
            client_id: client.client_id,
            redirect_uri: redirectUri,
            scope: scopes.join(" "),
            state,
            code_challenge: challenge,
            code_challenge_method: "S256"
          }).toString().replaceAll("+", "%20")
          return { authorizationUrl: url.toString(), pending: yield* Effect.orDie(Schema.encode(Pending)({ verifier })) }
        }),
      finish: ({ callbackUrl, pending, redirectUri, state }) =>
        Effect.gen(function*() {
          const { verifier } = yield* readPending("x", Pending, pending)
          const { authentication, client } = yield* app
          const tokens = yield* call(async () => {
            // A refusal (error=access_denied) throws here, with X's description.
            const parameters = oauth.validateAuthResponse(server, client, callbackUrl, state)
            const response = await oauth.authorizationCodeGrantRequest(
              server, client, authentication, parameters, redirectUri, verifier, options
            )
            return oauth.processAuthorizationCodeResponse(server, client, response)
          })
          // The token answer does not name the user: X's own id, which a reconnect finds the account by.
          const me = yield* callApi(Redacted.make(tokens.access_token), "/2/users/me", Me)
          return yield* credentialsOf(tokens, me.data.id, null)
        }),
      expiresAt: (credentials) => {
        const expiresAt = credentials.expiresAt === null ? Number.NaN : Date.parse(credentials.expiresAt)
        return Number.isNaN(expiresAt) ? null : new Date(expiresAt)
      },
      refresh: (credentials) =>
        Effect.gen(function*() {
          const { authentication, client } = yield* app
          if (credentials.refreshToken === null) {
            return yield* new ProviderError({
              provider: "x",
              category: "auth",
              retryable: false,
              providerMessage: "X gave no refresh token (offline.access was not granted): connect the account again"
            })
          }
          const refreshToken = credentials.refreshToken
          const tokens = yield* call(async () => {
            const response = await oauth.refreshTokenGrantRequest(
              server, client, authentication, Redacted.value(refreshToken), options
            )
            return oauth.processRefreshTokenResponse(server, client, response)
          })
          return yield* credentialsOf(tokens, credentials.userId, refreshToken)
        }),
      // The refresh token first: revoking it ends the grant; then the access token, which may outlive it.
      revoke: (credentials) =>
        Effect.gen(function*() {
          const { authentication, client } = yield* app
          const tokens = [
            ...(credentials.refreshToken === null ? [] : [{ token: credentials.refreshToken, hint: "refresh_token" }]),
            { token: credentials.accessToken, hint: "access_token" }
          ]
          yield* Effect.forEach(tokens, ({ hint, token }) =>
            call(async () => {
              const response = await oauth.revocationRequest(server, client, authentication, Redacted.value(token), {
                ...options,
                additionalParameters: { token_type_hint: hint }
              })
              await oauth.processRevocationResponse(response)
            }), { discard: true })
        })
    }
    return network
  }),
  dependencies: [XClient.Default]
}) {}
