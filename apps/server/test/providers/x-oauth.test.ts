import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Redacted } from "effect"
import { createHash } from "node:crypto"
import { Outbound } from "../../src/Outbound/Outbound.js"
import { X } from "../../src/Providers/X.js"
import { XOAuth } from "../../src/Providers/XOAuth.js"
import { XSettings } from "../../src/Providers/XSettings.js"
import { consentAtX, makeXFake, type XFake, xSettingsOf } from "../support/XFake.js"

/** XOAuth and X against the fake, allowed to reach this machine. */
const connect = (fake: XFake, overrides: Partial<XSettings> = {}) =>
  Layer.build(Layer.mergeAll(XOAuth.Default, X.Default).pipe(
    Layer.provide(Outbound.Default({ allowPrivate: true })),
    Layer.provide(xSettingsOf(fake, overrides))
  )).pipe(Effect.map((context) => ({ oauth: Context.get(context, XOAuth), x: Context.get(context, X) })))

const redirectUri = "https://postline.test/v1/oauth/callback/x"
const hints = { provider: "x" as const }

/** Signs in at the fake: the connect's start, the consent, and the finish. */
const signIn = (fake: XFake) =>
  Effect.gen(function*() {
    const { oauth, x } = yield* connect(fake)
    const state = crypto.randomUUID()
    const start = yield* oauth.authorize({ state, redirectUri, hints })
    const callbackUrl = yield* consentAtX(start.authorizationUrl, "allow")
    const credentials = yield* oauth.finish({ pending: start.pending, state, redirectUri, callbackUrl })
    return { oauth, x, start, state, callbackUrl, credentials }
  })

const tokenCalls = (fake: XFake) => fake.requests.filter(({ path }) => path === "/2/oauth2/token")

describe("X sign-in (OAuth 2.0 with PKCE, against a fake X that follows its documentation)", () => {
  it.scopedLive("authorize builds X's URL; the consent's callback finishes with the user's tokens", () =>
    Effect.gen(function*() {
      const fake = yield* makeXFake()
      const before = Date.now()
      const { callbackUrl, credentials, oauth, start, state, x } = yield* signIn(fake)
      const after = Date.now()

      const url = new URL(start.authorizationUrl)
      expect(url.origin + url.pathname).toBe(fake.authorizeUrl)
      expect(start.authorizationUrl).toContain("scope=tweet.read%20tweet.write%20users.read%20media.write%20offline.access")
      const { verifier } = JSON.parse(start.pending)
      expect(Object.fromEntries(url.searchParams)).toEqual({
        response_type: "code",
        client_id: fake.clientId,
        redirect_uri: redirectUri,
        scope: "tweet.read tweet.write users.read media.write offline.access",
        state,
        code_challenge: createHash("sha256").update(verifier).digest("base64url"),
        code_challenge_method: "S256"
      })
      expect(callbackUrl.searchParams.get("state")).toBe(state)

      expect(credentials).toMatchObject({ provider: "x", userId: fake.user.id, scope: "tweet.read tweet.write users.read media.write offline.access" })
      expect(credentials.refreshToken).not.toBeNull()
      const expiresAt = oauth.expiresAt(credentials)!.getTime()
      expect(expiresAt).toBeGreaterThanOrEqual(before + 7200_000 - 1000)
      expect(expiresAt).toBeLessThanOrEqual(after + 7200_000)
      expect(String(credentials.accessToken)).toBe("<redacted>")
      expect((yield* x.verify(credentials)).networkUserId).toBe(fake.user.id)

      // A confidential client: HTTP Basic, and the code with its verifier and redirect_uri.
      const [exchange] = tokenCalls(fake)
      expect(exchange!.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.clientId}:${fake.clientSecret}`).toString("base64")}`)
      expect(Object.fromEntries(new URLSearchParams(exchange!.body))).toEqual({
        grant_type: "authorization_code",
        code: callbackUrl.searchParams.get("code"),
        redirect_uri: redirectUri,
        code_verifier: verifier
      })
      expect(fake.requests.filter(({ path }) => path.startsWith("/2/users/me"))[0]!.headers.authorization)
        .toBe(`Bearer ${Redacted.value(credentials.accessToken)}`)
    }))

  it.scopedLive("a code is taken once: finishing again is an auth error, and X revokes what the code gave", () =>
    Effect.gen(function*() {
      const fake = yield* makeXFake()
      const { callbackUrl, credentials, oauth, start, state, x } = yield* signIn(fake)
      const again = yield* oauth.finish({ pending: start.pending, state, redirectUri, callbackUrl }).pipe(Effect.flip)
      expect(again).toMatchObject({ provider: "x", category: "auth", retryable: false, providerStatus: 400 })
      expect(yield* x.verify(credentials).pipe(Effect.flip)).toMatchObject({ category: "auth", providerStatus: 401 })
    }))

  it.scopedLive("Cancel at X comes back as access_denied: an auth error with X's words, and no token call", () =>
    Effect.gen(function*() {
      const fake = yield* makeXFake()
      const { oauth } = yield* connect(fake)
      const state = crypto.randomUUID()
      const start = yield* oauth.authorize({ state, redirectUri, hints })
      const callbackUrl = yield* consentAtX(start.authorizationUrl, "deny")
      const error = yield* oauth.finish({ pending: start.pending, state, redirectUri, callbackUrl }).pipe(Effect.flip)
      expect(error).toMatchObject({ provider: "x", category: "auth", retryable: false, providerMessage: "access_denied: The user denied the request" })
      expect(tokenCalls(fake)).toHaveLength(0)
    }))

  it.scopedLive("a callback with another state, or a verifier that is not the challenge's, gets no tokens", () =>
    Effect.gen(function*() {
      const fake = yield* makeXFake()
      const { oauth } = yield* connect(fake)
      const state = crypto.randomUUID()
      const start = yield* oauth.authorize({ state, redirectUri, hints })
      const callbackUrl = yield* consentAtX(start.authorizationUrl, "allow")
      const forged = yield* oauth.finish({ pending: start.pending, state: "another", redirectUri, callbackUrl }).pipe(Effect.flip)
      expect(forged).toMatchObject({ provider: "x", retryable: false })
      expect(tokenCalls(fake)).toHaveLength(0)

      const otherVerifier = JSON.stringify({ verifier: "x".repeat(43) })
      const refused = yield* oauth.finish({ pending: otherVerifier, state, redirectUri, callbackUrl }).pipe(Effect.flip)
      expect(refused).toMatchObject({ category: "auth", providerStatus: 400, providerMessage: "invalid_grant: code_verifier does not match" })
      expect(fake.grants).toHaveLength(0)
    }))

  it.scopedLive("the fake's consent page checks the client, the exact redirect_uri, S256 and the scopes", () =>
    Effect.gen(function*() {
      const fake = yield* makeXFake()
      const { oauth } = yield* connect(fake)
      const start = yield* oauth.authorize({ state: "s", redirectUri, hints })
      const status = (change: Record<string, string>) =>
        Effect.promise(async () => {
          const url = new URL(start.authorizationUrl)
          for (const [name, value] of Object.entries(change)) url.searchParams.set(name, value)
          return (await fetch(url)).status
        })
      expect(yield* status({})).toBe(200)
      expect(yield* status({ client_id: "someone-else" })).toBe(400)
      expect(yield* status({ redirect_uri: `${redirectUri}/` })).toBe(400)
      expect(yield* status({ code_challenge_method: "plain" })).toBe(400)
      expect(yield* status({ scope: "tweet.read tweet.everything" })).toBe(400)
    }))

  it.scopedLive("refresh rotates the refresh token, and the grant was refreshed once", () =>
    Effect.gen(function*() {
      const fake = yield* makeXFake()
      const { credentials, oauth, x } = yield* signIn(fake)
      const renewed = yield* oauth.refresh(credentials)
      expect(renewed.userId).toBe(credentials.userId)
      expect(Redacted.value(renewed.accessToken)).not.toBe(Redacted.value(credentials.accessToken))
      expect(Redacted.value(renewed.refreshToken!)).not.toBe(Redacted.value(credentials.refreshToken!))
      expect(fake.grants.map(({ refreshCount }) => refreshCount)).toEqual([1])
      expect(yield* x.verify(renewed)).toMatchObject({ handle: "@alice_x" })
      const refresh = tokenCalls(fake).at(-1)!
      expect(Object.fromEntries(new URLSearchParams(refresh.body))).toEqual({
        grant_type: "refresh_token",
        refresh_token: Redacted.value(credentials.refreshToken!)
      })
      expect(refresh.headers.authorization).toMatch(/^Basic /)
    }))

  it.scopedLive("a refresh token used twice revokes the grant: invalid_grant is auth, and the newest tokens die too", () =>
    Effect.gen(function*() {
      const fake = yield* makeXFake()
      const { credentials, oauth, x } = yield* signIn(fake)
      const renewed = yield* oauth.refresh(credentials)
      const reused = yield* oauth.refresh(credentials).pipe(Effect.flip)
      expect(reused).toMatchObject({ provider: "x", category: "auth", retryable: false, providerStatus: 400 })
      expect(reused.providerMessage).toContain("invalid_grant")
      expect(fake.grants[0]!.revoked).toBe(true)
      expect(yield* oauth.refresh(renewed).pipe(Effect.flip)).toMatchObject({ category: "auth" })
      expect(yield* x.verify(renewed).pipe(Effect.flip)).toMatchObject({ category: "auth", providerStatus: 401 })
      expect(fake.grants[0]!.refreshCount).toBe(1)
    }))

  it.scopedLive("X's own words for a spent token (invalid_request) are auth; an X down or unreachable is transient", () =>
    Effect.gen(function*() {
      const fake = yield* makeXFake()
      const { credentials, oauth } = yield* signIn(fake)
      fake.answerNext({ status: 400, body: { error: "invalid_request", error_description: "Value passed for the token was invalid." } })
      expect(yield* oauth.refresh(credentials).pipe(Effect.flip)).toMatchObject({ category: "auth", retryable: false })

      fake.answerNext({ status: 503, body: { title: "Service Unavailable" } })
      expect(yield* oauth.refresh(credentials).pipe(Effect.flip)).toMatchObject({ category: "transient", retryable: true, providerStatus: 503 })
      // Neither answer spent the refresh token.
      yield* oauth.refresh(credentials)
      expect(fake.grants[0]!.refreshCount).toBe(1)

      const down = yield* connect(fake, { apiUrl: "http://127.0.0.1:1" })
      expect(yield* down.oauth.refresh(credentials).pipe(Effect.flip)).toMatchObject({ category: "transient", retryable: true })
    }))

  it.scopedLive("an access token past its lifetime is refused, and the refreshed one works", () =>
    Effect.gen(function*() {
      const fake = yield* makeXFake({ accessTokenSeconds: 1 })
      const { credentials, oauth, x } = yield* signIn(fake)
      expect(oauth.expiresAt(credentials)!.getTime()).toBeLessThanOrEqual(Date.now() + 1000)
      yield* Effect.sleep("1200 millis")
      expect(yield* x.verify(credentials).pipe(Effect.flip)).toMatchObject({ category: "auth", providerStatus: 401 })
      fake.setAccessTokenSeconds(7200)
      expect((yield* x.verify(yield* oauth.refresh(credentials))).networkUserId).toBe(fake.user.id)
    }))

  it.scopedLive("revoke ends the grant at X; revoking again is no failure", () =>
    Effect.gen(function*() {
      const fake = yield* makeXFake()
      const { credentials, oauth, x } = yield* signIn(fake)
      yield* oauth.revoke(credentials)
      const revocations = fake.requests.filter(({ path }) => path === "/2/oauth2/revoke")
      expect(revocations.map(({ body }) => Object.fromEntries(new URLSearchParams(body)))).toEqual([
        { token_type_hint: "refresh_token", token: Redacted.value(credentials.refreshToken!) },
        { token_type_hint: "access_token", token: Redacted.value(credentials.accessToken) }
      ])
      expect(revocations[0]!.headers.authorization).toMatch(/^Basic /)
      expect(yield* x.verify(credentials).pipe(Effect.flip)).toMatchObject({ category: "auth" })
      expect(yield* oauth.refresh(credentials).pipe(Effect.flip)).toMatchObject({ category: "auth" })
      yield* oauth.revoke(credentials)
    }))

  it.scopedLive("without X_CLIENT_ID or X_CLIENT_SECRET the network says what is missing and does not start", () =>
    Effect.gen(function*() {
      const fake = yield* makeXFake()
      const { oauth } = yield* connect(fake, { clientId: null, clientSecret: null })
      expect({ missing: oauth.missingSettings, refreshes: oauth.refreshes, scopes: oauth.scopes }).toEqual({
        missing: ["X_CLIENT_ID", "X_CLIENT_SECRET"],
        refreshes: true,
        scopes: ["tweet.read", "tweet.write", "users.read", "media.write", "offline.access"]
      })
      const error = yield* oauth.authorize({ state: "s", redirectUri, hints }).pipe(Effect.flip)
      expect(error).toMatchObject({ category: "unknown", providerMessage: "X is not set up on this server: X_CLIENT_ID and X_CLIENT_SECRET missing" })
      expect(fake.requests).toHaveLength(0)
    }))

  it.effect("XSettings reads the environment once: an empty value is unset, X's addresses by default", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        XSettings.pipe(Effect.provide(XSettings.Default), Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
      const unset = yield* read({ X_CLIENT_ID: " ", X_CLIENT_SECRET: "" })
      expect(unset).toMatchObject({ clientId: null, clientSecret: null, apiUrl: "https://api.x.com", authorizeUrl: "https://x.com/i/oauth2/authorize" })
      const set = yield* read({ X_CLIENT_ID: "id", X_CLIENT_SECRET: "secret", X_API_URL: "http://127.0.0.1:9/" })
      expect({ ...set, clientSecret: Redacted.value(set.clientSecret!) }).toMatchObject({ clientId: "id", clientSecret: "secret", apiUrl: "http://127.0.0.1:9" })
    }))
})
