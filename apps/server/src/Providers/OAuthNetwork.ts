import type { OAuthProvider, StartConnect } from "@postline/domain"
import type { Effect } from "effect"
import type { CredentialsOf } from "./Credentials.js"
import type { ProviderError } from "./SocialProvider.js"

/** A network's sign-in page for one connect, and what finishing the connect needs back from it. */
export interface AuthorizationStart {
  readonly authorizationUrl: string
  /**
   * What the callback needs to finish (a PKCE verifier, the instance's app): the network's own JSON, kept
   * encrypted with the connect until the callback and never shown.
   */
  readonly pending: string
  /**
   * The state the network's page was given, where the network's client library chose it rather than taking the
   * connect's (atproto's); the callback finds the connect by it.
   */
  readonly state?: string
}

export interface AuthorizationRequest<P extends OAuthProvider> {
  /** The connect's one-time `state`, sent to the network and checked when it comes back. */
  readonly state: string
  /** `<origin>/v1/oauth/callback/<provider>`, where the network sends the person back. */
  readonly redirectUri: string
  readonly hints: Extract<StartConnect, { readonly provider: P }>
}

export interface CallbackRequest {
  /** What `authorize` left to finish with. */
  readonly pending: string
  readonly state: string
  readonly redirectUri: string
  /** The callback's whole URL as the network sent the person back (code, state, iss, or error). */
  readonly callbackUrl: URL
}

/**
 * A network whose accounts are connected by signing in there (OAuth): the connect flow (AccountConnects) and the
 * token renewal (SocialAccounts/TokenRenewal.ts) work through this, the same for every network. A refusal is a
 * ProviderError: category `auth` when it is for good (the person denied, `invalid_grant`), else as it came.
 */
export interface OAuthNetwork<P extends OAuthProvider = OAuthProvider> {
  readonly provider: P
  /** What Postline asks the network to allow. */
  readonly scopes: ReadonlyArray<string>
  /** The settings this server lacks for the network (X_CLIENT_ID, …); none when it can connect. */
  readonly missingSettings: ReadonlyArray<string>
  /** Whether the network's access tokens expire and are renewed with a refresh token. */
  readonly refreshes: boolean
  readonly authorize: (request: AuthorizationRequest<P>) => Effect.Effect<AuthorizationStart, ProviderError>
  /** Exchanges the callback's code for the account's credentials (its tokens, encrypted by the caller). */
  readonly finish: (request: CallbackRequest) => Effect.Effect<CredentialsOf<P>, ProviderError>
  /** When the credentials' access token expires; null where it does not (or they are not the network's tokens). */
  readonly expiresAt: (credentials: CredentialsOf<P>) => Date | null
  /**
   * New credentials from the refresh token. A network that rotates refresh tokens revokes the grant when one is
   * used twice: the caller makes sure one process at a time refreshes an account, and stores what this answers.
   */
  readonly refresh: (credentials: CredentialsOf<P>) => Effect.Effect<CredentialsOf<P>, ProviderError>
  /**
   * A document about Postline that the network reads at `path` on this server (atproto's client metadata), or none.
   */
  readonly publishedDocument?: { readonly path: `/${string}`; readonly document: Effect.Effect<object | null> }
  /** Revokes the credentials' tokens at the network, where it offers revocation; a token already gone is no failure. */
  readonly revoke: (credentials: CredentialsOf<P>) => Effect.Effect<void, ProviderError>
}
