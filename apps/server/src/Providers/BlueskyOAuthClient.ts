import { Config, Effect, Option, Redacted } from "effect"
import { type LazyModule, lazyModule } from "../LazyModule.js"
import { Outbound } from "../Outbound/Outbound.js"

/** atproto OAuth's client: loaded when a Bluesky account is first connected or used by signing in. */
export const AtprotoOAuthModule = lazyModule("@atproto/oauth-client-node", () => import("@atproto/oauth-client-node"), {
  NodeOAuthClient: "function",
  JoseKey: "function",
  TokenRefreshError: "function",
  TokenRevokedError: "function",
  TokenInvalidError: "function",
  OAuthCallbackError: "function"
})
export type AtprotoOAuth = LazyModule.Exports<typeof AtprotoOAuthModule>

/** What Postline asks a PDS to allow: writing records of the account's repository, and reading. */
export const blueskyScope = "atproto transition:generic"

/** Where Postline's client metadata is served, for a PDS to read (a web client's `client_id`). */
export const clientMetadataPath = "/v1/oauth/bluesky/client-metadata.json" as const

/**
 * How Postline signs in at a PDS. With PUBLIC_URL (https) and BLUESKY_OAUTH_PRIVATE_KEY (an ES256 private JWK), it is
 * a confidential web client whose metadata it serves at `clientMetadataPath`; without them, atproto's loopback
 * client for development, which a PDS accepts only for a server reached at 127.0.0.1. BLUESKY_PLC_URL and
 * BLUESKY_HANDLE_RESOLVER point at another PLC directory and handle resolver than Bluesky's (a private network).
 */
export class BlueskyOAuthSettings extends Effect.Service<BlueskyOAuthSettings>()("BlueskyOAuthSettings", {
  effect: Effect.gen(function*() {
    const publicUrl = yield* Config.option(Config.url("PUBLIC_URL"))
    const privateKey = yield* Config.option(Config.redacted("BLUESKY_OAUTH_PRIVATE_KEY").pipe(
      Config.validate({
        message: "must be an ES256 private key as a JWK (JSON with kty EC, crv P-256 and d)",
        validation: (key) => {
          const jwk = (() => { try { return JSON.parse(Redacted.value(key)) } catch { return null } })()
          return jwk?.kty === "EC" && jwk?.crv === "P-256" && typeof jwk?.d === "string"
        }
      })
    ))
    const plcDirectoryUrl = yield* Config.url("BLUESKY_PLC_URL").pipe(Config.withDefault(new URL("https://plc.directory")))
    const handleResolver = yield* Config.option(Config.url("BLUESKY_HANDLE_RESOLVER"))
    const allowHttp = yield* Config.boolean("OUTBOUND_ALLOW_PRIVATE").pipe(Config.withDefault(false))
    return {
      /** `<PUBLIC_URL>` when it is https, else null. */
      publicOrigin: Option.getOrNull(Option.filter(publicUrl, (url) => url.protocol === "https:"))?.origin ?? null,
      privateKey: Option.getOrNull(privateKey),
      plcDirectoryUrl: plcDirectoryUrl.href.replace(/\/+$/, ""),
      handleResolver: Option.getOrNull(handleResolver)?.href.replace(/\/+$/, "") ?? null,
      allowHttp
    }
  })
}) {}

/** A store of JSON rows that keeps them as text: what leaves it is what Postline encrypts and stores. */
export const jsonRows = (seed: ReadonlyArray<readonly [string, string]> = []) => {
  const rows = new Map<string, string>(seed)
  return {
    rows,
    store: {
      set: async (key: string, value: unknown) => void rows.set(key, JSON.stringify(value)),
      get: async (key: string) => (rows.has(key) ? JSON.parse(rows.get(key)!) : undefined),
      del: async (key: string) => void rows.delete(key)
    }
  }
}

type Rows = ReturnType<typeof jsonRows>

/**
 * atproto OAuth clients over stores of one connect or one account: the library keeps state and sessions in stores
 * it is given, and each client here is made for one operation over rows that Postline keeps encrypted. One process
 * at a time renews an account's tokens (TokenRenewal): the lock the library asks for is the process's own.
 */
export class BlueskyOAuthClients extends Effect.Service<BlueskyOAuthClients>()("BlueskyOAuthClients", {
  effect: Effect.gen(function*() {
    const outbound = yield* Outbound
    const settings = yield* BlueskyOAuthSettings
    const loadModule = yield* Effect.cached(AtprotoOAuthModule.load)
    const web = settings.publicOrigin !== null && settings.privateKey !== null
    const locks = new Map<string, Promise<unknown>>()
    const requestLock = async <T>(name: string, fn: () => T | PromiseLike<T>): Promise<T> => {
      const before = locks.get(name) ?? Promise.resolve()
      const run = before.then(fn, fn)
      locks.set(name, run.catch(() => undefined))
      return run
    }

    /** The client metadata a PDS reads at `clientMetadataPath` (a web client), or null for the loopback client. */
    const webMetadata = (module: AtprotoOAuth) =>
      Effect.promise(async () => {
        if (!web) return null
        const jwk = JSON.parse(Redacted.value(settings.privateKey!))
        const key = await module.JoseKey.fromJWK(jwk, jwk.kid ?? "postline-bluesky")
        return {
          key,
          metadata: {
            client_id: `${settings.publicOrigin}${clientMetadataPath}`,
            client_name: "Postline",
            client_uri: settings.publicOrigin!,
            redirect_uris: [`${settings.publicOrigin}/v1/oauth/callback/bluesky`] as [string],
            scope: blueskyScope,
            grant_types: ["authorization_code", "refresh_token"] as ["authorization_code", "refresh_token"],
            response_types: ["code"] as ["code"],
            application_type: "web" as const,
            token_endpoint_auth_method: "private_key_jwt" as const,
            token_endpoint_auth_signing_alg: "ES256",
            dpop_bound_access_tokens: true,
            jwks: { keys: [key.publicJwk!] }
          }
        }
      })
    const cachedWeb = yield* Effect.cached(Effect.flatMap(loadModule, webMetadata))

    const loopbackMetadata = (redirectUri: string) => ({
      client_id: `http://localhost?${new URLSearchParams({ redirect_uri: redirectUri, scope: blueskyScope })}`,
      redirect_uris: [redirectUri] as [string],
      scope: blueskyScope,
      grant_types: ["authorization_code", "refresh_token"] as ["authorization_code", "refresh_token"],
      response_types: ["code"] as ["code"],
      application_type: "native" as const,
      token_endpoint_auth_method: "none" as const,
      dpop_bound_access_tokens: true
    })

    /** A client for one operation; `redirectUri` names the loopback client a connect was started with. */
    const client = (redirectUri: string, state: Rows, sessions: Rows) =>
      Effect.gen(function*() {
        const module = yield* loadModule
        const webClient = yield* cachedWeb
        return new module.NodeOAuthClient({
          clientMetadata: webClient?.metadata ?? loopbackMetadata(redirectUri),
          ...(webClient ? { keyset: [webClient.key] } : {}),
          allowHttp: settings.allowHttp,
          plcDirectoryUrl: settings.plcDirectoryUrl,
          ...(settings.handleResolver !== null ? { handleResolver: settings.handleResolver } : {}),
          fetch: outbound.fetch,
          stateStore: state.store,
          sessionStore: sessions.store,
          requestLock
        })
      })

    return {
      module: loadModule,
      client,
      /** Whether this server signs in as a web client (PUBLIC_URL https and a key), rather than the loopback one. */
      web,
      metadata: Effect.map(cachedWeb, (webClient) => webClient?.metadata ?? null),
      /** A session of an account connected by signing in, to call its PDS with. */
      session: (signedIn: { readonly did: string; readonly redirectUri: string; readonly oauthSession: Redacted.Redacted<string> }) =>
        Effect.flatMap(client(signedIn.redirectUri, jsonRows(), jsonRows([[signedIn.did, Redacted.value(signedIn.oauthSession)]])),
          (oauthClient) => Effect.tryPromise(() => oauthClient.restore(signedIn.did, false)))
    } as const
  })
}) {}
