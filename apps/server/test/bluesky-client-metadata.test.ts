import { describe, expect, layer } from "@effect/vitest"
import { JoseKey } from "@atproto/oauth-client-node"
import { Effect, Layer, Logger, LogLevel, Redacted } from "effect"
import { BlueskyOAuthSettings } from "../src/Providers/BlueskyOAuthClient.js"
import { XSettings } from "../src/Providers/XSettings.js"
import { localOAuthNetworksWith, localProvidersWith } from "./support/Providers.js"
import { makeTestServer, raw, signUp } from "./support/TestServer.js"
import { freshTestStorage } from "./support/TestStorage.js"

const publicOrigin = "https://postline.invalid"

/** A server behind a public https address, as Bluesky's web client with `privateKey`, or without one. */
const serverWith = (privateKey: string | null) => {
  const bluesky = Layer.succeed(BlueskyOAuthSettings, BlueskyOAuthSettings.make({
    publicOrigin,
    privateKey: privateKey === null ? null : Redacted.make(privateKey),
    plcDirectoryUrl: "https://plc.invalid",
    handleResolver: null,
    allowHttp: false
  }))
  return makeTestServer(
    Logger.minimumLogLevel(LogLevel.Error),
    localProvidersWith(XSettings.Default, bluesky),
    freshTestStorage("filesystem"),
    localOAuthNetworksWith(XSettings.Default, bluesky)
  )
}

const blueskyConnect = Effect.gen(function*() {
  const { token } = yield* signUp()
  const providers = yield* raw({ method: "GET", path: "/v1/providers", token })
  return (providers.body.data as Array<any>).find((rules) => rules.provider === "bluesky").connect
})

const key = await JoseKey.generate(["ES256"], "postline-1")

describe("Bluesky's client metadata, for a server at a public https address", () => {
  layer(serverWith(JSON.stringify(key.privateJwk)), { excludeTestServices: true })("with BLUESKY_OAUTH_PRIVATE_KEY", (it) => {
    it.effect("is served where its client_id says, names the callback, and shows the public key alone", () =>
      Effect.gen(function*() {
        const answer = yield* raw({ method: "GET", path: "/v1/oauth/bluesky/client-metadata.json" })
        expect(answer.status).toBe(200)
        expect(answer.body).toMatchObject({
          client_id: `${publicOrigin}/v1/oauth/bluesky/client-metadata.json`,
          client_uri: publicOrigin,
          redirect_uris: [`${publicOrigin}/v1/oauth/callback/bluesky`],
          application_type: "web",
          token_endpoint_auth_method: "private_key_jwt",
          token_endpoint_auth_signing_alg: "ES256",
          dpop_bound_access_tokens: true,
          scope: "atproto transition:generic"
        })
        expect(answer.body.jwks.keys).toHaveLength(1)
        expect(answer.body.jwks.keys[0]).toMatchObject({ kty: "EC", crv: "P-256", kid: "postline-1" })
        expect(answer.body.jwks.keys[0].d).toBeUndefined()
        expect((yield* blueskyConnect).oauth).toMatchObject({ configured: true, missingSettings: [] })
      }))
  })

  layer(serverWith(null), { excludeTestServices: true })("without a key", (it) => {
    it.effect("says the key is missing, and serves no metadata", () =>
      Effect.gen(function*() {
        expect((yield* blueskyConnect).oauth).toMatchObject({ configured: false, missingSettings: ["BLUESKY_OAUTH_PRIVATE_KEY"] })
        const answer = yield* raw({ method: "GET", path: "/v1/oauth/bluesky/client-metadata.json" })
        expect(answer.status).toBe(404)
        expect(answer.body._tag).toBe("NotFound")
      }))
  })
})
