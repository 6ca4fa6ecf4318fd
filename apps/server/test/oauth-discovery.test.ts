import { expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { ConfigProvider, Effect, Layer, Logger, LogLevel, Redacted } from "effect"
import * as oauth from "openid-client"
import { UsersRepo } from "../src/Users/Repo.js"
import { makeTestServer, raw, signUp } from "./support/TestServer.js"

const password = "correct horse battery"

// A one-second polling interval keeps the client's wait short.
const DiscoveryServer = makeTestServer(Logger.minimumLogLevel(LogLevel.Warning)).pipe(
  Layer.provide(Layer.setConfigProvider(
    ConfigProvider.fromMap(new Map([["DEVICE_POLL_INTERVAL_SECONDS", "1"]])).pipe(
      ConfigProvider.orElse(() => ConfigProvider.fromEnv())
    )
  ))
)

const issuerOf = Effect.map(HttpServer.HttpServer, (server) => `http://127.0.0.1:${(server.address as HttpServer.TcpAddress).port}`)

layer(DiscoveryServer, { excludeTestServices: true })("OAuth discovery", (it) => {
  it.effect("serves RFC 8414 metadata, with the request's origin as issuer", () =>
    Effect.gen(function*() {
      const issuer = yield* issuerOf
      const response = yield* raw({ method: "GET", path: "/.well-known/oauth-authorization-server" })
      expect(response.status).toBe(200)
      expect(response.body).toEqual({
        issuer,
        device_authorization_endpoint: `${issuer}/v1/auth/device/code`,
        token_endpoint: `${issuer}/v1/auth/token`,
        revocation_endpoint: `${issuer}/v1/auth/revoke`,
        grant_types_supported: ["urn:ietf:params:oauth:grant-type:device_code", "refresh_token"],
        response_types_supported: [],
        token_endpoint_auth_methods_supported: ["none"],
        revocation_endpoint_auth_methods_supported: ["none"]
      })
    }))

  it.effect("openid-client runs the whole device login: discovery, code, approval, polling, refresh, revocation", () =>
    Effect.gen(function*() {
      const account = yield* signUp("Discovering")
      expect(yield* (yield* UsersRepo).setPassword(account.user.email, Redacted.make(password))).toBe(true)
      const issuer = yield* issuerOf

      const flow = yield* Effect.promise(async () => {
        const config = await oauth.discovery(new URL(issuer), "postline-test-cli", undefined, oauth.None(), {
          algorithm: "oauth2",
          execute: [oauth.allowInsecureRequests]
        })
        const device = await oauth.initiateDeviceAuthorization(config, { scope: "posts" })
        // The user approves on the page the client was told of.
        const approval = await fetch(device.verification_uri, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ email: account.user.email, password, user_code: device.user_code, action: "approve" })
        })
        const tokens = await oauth.pollDeviceAuthorizationGrant(config, device)
        const refreshed = await oauth.refreshTokenGrant(config, tokens.refresh_token!)
        const before = await fetch(`${issuer}/v1/organizations`, { headers: { authorization: `Bearer ${refreshed.access_token}` } })
        await oauth.tokenRevocation(config, refreshed.access_token)
        const after = await fetch(`${issuer}/v1/organizations`, { headers: { authorization: `Bearer ${refreshed.access_token}` } })
        const reused = await oauth.refreshTokenGrant(config, refreshed.refresh_token!).then(() => undefined, (error) => error)
        return { config, device, approval: approval.status, tokens, refreshed, before: before.status, after: after.status, reused }
      })

      expect(flow.config.serverMetadata().issuer).toBe(issuer)
      expect(flow.device.verification_uri).toBe(`${issuer}/device`)
      expect(flow.approval).toBe(200)
      expect(flow.tokens).toMatchObject({ token_type: "bearer", expires_in: 3600 })
      expect(flow.tokens.access_token).toMatch(/^plt_/)
      expect(flow.refreshed.access_token).not.toBe(flow.tokens.access_token)
      expect(flow.before).toBe(200)
      expect(flow.after).toBe(401)
      // Revoking the access token ended the whole login, its refresh token with it.
      expect(flow.reused).toMatchObject({ error: "invalid_grant" })
    }))
})
