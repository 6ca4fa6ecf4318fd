import { expect, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Context, Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import { credentialsFromJson } from "../src/Providers/Credentials.js"
import { CredentialsCipher } from "../src/Secrets/CredentialsCipher.js"
import { RenewalsRepo } from "../src/SocialAccounts/RenewalsRepo.js"
import { TokenRenewal } from "../src/SocialAccounts/TokenRenewal.js"
import { localOAuthNetworksWith, localProvidersWith } from "./support/Providers.js"
import { publishingTeam } from "./support/Publishing.js"
import { makeTestServer } from "./support/TestServer.js"
import { freshTestStorage } from "./support/TestStorage.js"
import { consentAtX, makeXFake, type XFake, xSettingsOf } from "./support/XFake.js"

class TheXFake extends Context.Tag("test/TheXFake")<TheXFake, XFake>() {}

/** A server set up for X against the fake, whose access tokens live 30 seconds: each publish renews them first. */
const XServer = Layer.unwrapScoped(Effect.gen(function*() {
  const fake = yield* makeXFake({ accessTokenSeconds: 30 })
  const settings = xSettingsOf(fake)
  return makeTestServer(
    Logger.minimumLogLevel(LogLevel.Error),
    localProvidersWith(settings),
    freshTestStorage("filesystem"),
    localOAuthNetworksWith(settings)
  ).pipe(
    Layer.merge(Layer.succeed(TheXFake, fake)),
    // The tests renew when they say: the worker's own rounds would take the fake's canned answers.
    Layer.provide(Layer.setConfigProvider(
      ConfigProvider.fromMap(new Map([["TOKEN_RENEWAL_POLL_MS", String(24 * 60 * 60 * 1000)]])).pipe(
        ConfigProvider.orElse(() => ConfigProvider.fromEnv())
      )
    ))
  )
}))

/** Only this account's tokens are due for renewal, now: the others of the file's earlier tests are pushed a day on. */
const onlyDue = (accountId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`UPDATE social_accounts SET token_expires_at = CASE WHEN id = ${accountId} THEN now() ELSE now() + interval '1 day' END
      WHERE token_expires_at IS NOT NULL`)

type Team = Effect.Effect.Success<ReturnType<typeof publishingTeam>>

/** POST …/connect for X, the person's approval at X, and the browser sent back to this server: the account. */
const connectX = (team: Team, decision: "allow" | "deny" = "allow") =>
  Effect.gen(function*() {
    const fake = yield* TheXFake
    const server = yield* HttpServer.HttpServer
    fake.registerRedirectUri(`http://127.0.0.1:${(server.address as HttpServer.TcpAddress).port}/v1/oauth/callback/x`)
    const started = yield* team.call("POST", "/social-accounts/connect", { provider: "x" })
    expect(started.status, JSON.stringify(started.body)).toBe(201)
    const back = yield* consentAtX(started.body.authorizationUrl, decision)
    const page = yield* Effect.promise(() => fetch(back, { redirect: "manual" }).then(async (r) => ({ status: r.status, text: await r.text() })))
    const status = yield* team.call("GET", `/social-accounts/connect/${started.body.connectId}`)
    return { started, page, status: status.body }
  })

const storedCredentials = (accountId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cipher = yield* CredentialsCipher
    const [row] = yield* sql<{ credentials: string; token_expires_at: unknown }>`SELECT credentials, token_expires_at FROM social_accounts WHERE id = ${accountId}`
    return { credentials: yield* credentialsFromJson(yield* cipher.decrypt(row.credentials)), tokenExpiresAt: row.token_expires_at }
  })

layer(XServer, { excludeTestServices: true })("X, connected by signing in", (it) => {
  it.scoped("from POST …/connect to a thread with a first comment, then deleted; the token renewed once per publish, rotated and kept", () =>
    Effect.gen(function*() {
      const fake = yield* TheXFake
      const team = yield* publishingTeam(20)
      const { page, started, status } = yield* connectX(team)
      const authorization = new URL(started.body.authorizationUrl)
      expect(authorization.searchParams.get("scope")).toBe("tweet.read tweet.write users.read media.write offline.access")
      expect(authorization.searchParams.get("code_challenge_method")).toBe("S256")
      expect(page.status, page.text).toBe(200)
      expect(page.text).toContain("@alice_x")
      expect(status).toMatchObject({ status: "connected", account: { provider: "x", handle: "@alice_x", status: "connected" } })
      const accountId = status.account.id as string
      const [grant] = fake.grants
      expect(grant.refreshCount).toBe(0)

      const post = yield* team.call("POST", "/posts", {
        content: "1/3 Signed in to X",
        thread: [{ content: "2/3 a thread" }, { content: "3/3 its end" }],
        firstComment: { content: "The first comment" }
      })
      expect(post.status, JSON.stringify(post.body)).toBe(201)
      const sent = yield* team.postNow(post.body.id, [accountId])
      expect(sent.status, JSON.stringify(sent.body)).toBe(200)
      expect(sent.body.outcome).toBe("none_failed")
      const ours = fake.tweets.filter((tweet) => tweet.authorId === fake.user.id)
      expect(ours.map((tweet) => tweet.text)).toEqual(["1/3 Signed in to X", "2/3 a thread", "3/3 its end", "The first comment"])
      // Each part answers the one before; the first comment comes under the thread's end.
      expect(ours.map((tweet) => tweet.inReplyToId)).toEqual([undefined, ours[0].id, ours[1].id, ours[2].id])

      // The token had 30 seconds left: renewed once before sending, the rotated refresh token kept, the grant alive.
      expect(grant.refreshCount).toBe(1)
      expect(grant.revoked).toBe(false)
      const { credentials } = yield* storedCredentials(accountId)
      expect(credentials.provider === "x" && credentials.refreshToken !== null).toBe(true)

      // A check of the account renews a token about to expire first, as a publish does.
      const checked = yield* team.call("POST", `/social-accounts/${accountId}/verify`)
      expect(checked.body).toMatchObject({ status: "connected", handle: "@alice_x", lastError: null })
      expect(grant.refreshCount).toBe(2)

      const deleted = yield* team.call("POST", `/posts/${post.body.id}/unpublish`, {})
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(200)
      expect([...fake.deleted].sort()).toEqual(ours.map((tweet) => tweet.id).sort())
      expect(grant.revoked).toBe(false)
    }))

  it.scoped("the same X user connected again keeps one account, with the new grant's tokens", () =>
    Effect.gen(function*() {
      const fake = yield* TheXFake
      const team = yield* publishingTeam()
      const first = (yield* connectX(team)).status.account.id
      const second = (yield* connectX(team)).status.account.id
      expect(second).toBe(first)
      expect((yield* team.call("GET", "/social-accounts")).body.data).toHaveLength(1)
      const { credentials } = yield* storedCredentials(first)
      const newest = fake.grants.at(-1)!
      expect(credentials.provider === "x" && credentials.refreshToken !== null).toBe(true)
      expect(newest.accessTokens.map((token) => token.token)).toContain(credentials.provider === "x" ? Redacted.value(credentials.accessToken) : "")
    }))

  it.scoped("a renewal X refuses for good (invalid_grant) asks for a reconnect, which repairs the account", () =>
    Effect.gen(function*() {
      const fake = yield* TheXFake
      const renewal = yield* TokenRenewal
      const team = yield* publishingTeam(5)
      const accountId = (yield* connectX(team)).status.account.id as string
      yield* onlyDue(accountId)
      fake.answerNext({ status: 400, body: { error: "invalid_grant", error_description: "Value passed for the token was invalid." } })
      yield* renewal.renewDue
      const broken = yield* team.call("GET", `/social-accounts/${accountId}`)
      expect(broken.body).toMatchObject({ status: "reconnect_required", lastError: { category: "auth" } })
      expect(broken.body.lastError.message).toContain("connect it again")

      const post = yield* team.draft("Not while it needs reconnecting")
      const refused = yield* team.postNow(post.id, [accountId])
      expect(JSON.stringify(refused.body)).toContain("reconnect")

      const again = yield* connectX(team)
      expect(again.status.account.id).toBe(accountId)
      const repaired = yield* team.call("GET", `/social-accounts/${accountId}`)
      expect(repaired.body).toMatchObject({ status: "connected", lastError: null })
      const retry = yield* team.draft("After reconnecting")
      expect((yield* team.postNow(retry.id, [accountId])).body.outcome).toBe("none_failed")
    }))

  it.scoped("a renewal that fails for a while (X's 503) keeps the account connected and records why", () =>
    Effect.gen(function*() {
      const fake = yield* TheXFake
      const renewal = yield* TokenRenewal
      const team = yield* publishingTeam()
      const accountId = (yield* connectX(team)).status.account.id as string
      yield* onlyDue(accountId)
      fake.answerNext({ status: 503, body: { title: "Service Unavailable", detail: "Service Unavailable", type: "about:blank", status: 503 } })
      yield* renewal.renewDue
      const account = yield* team.call("GET", `/social-accounts/${accountId}`)
      expect(account.body).toMatchObject({ status: "connected", lastError: { category: "transient" } })
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ failures: number; retrying: boolean }>`SELECT renewal_failures AS failures,
        renewal_retry_at > now() AS retrying FROM social_accounts WHERE id = ${accountId}`
      expect(row).toEqual({ failures: 1, retrying: true })
    }))

  it.scoped("a token is renewed within TOKEN_RENEWAL_AHEAD_SECONDS of its end, or within half its life when that is shorter", () =>
    Effect.gen(function*() {
      const fake = yield* TheXFake
      const renewal = yield* TokenRenewal
      const team = yield* publishingTeam()
      const accountId = (yield* connectX(team)).status.account.id as string
      const grant = fake.grants.at(-1)!
      const sql = yield* SqlClient.SqlClient
      yield* onlyDue(accountId)
      // A 15-minute token with 9 left: within the 10 minutes ahead, but not yet past half its life.
      yield* sql`UPDATE social_accounts SET token_issued_at = now() - interval '6 minutes',
        token_expires_at = now() + interval '9 minutes' WHERE id = ${accountId}`
      yield* renewal.renewDue
      expect(grant.refreshCount).toBe(0)
      yield* sql`UPDATE social_accounts SET token_issued_at = now() - interval '8 minutes',
        token_expires_at = now() + interval '7 minutes' WHERE id = ${accountId}`
      yield* renewal.renewDue
      expect(grant.refreshCount).toBe(1)
      const [row] = yield* sql<{ renewed: boolean }>`SELECT token_issued_at > now() - interval '1 minute' AS renewed
        FROM social_accounts WHERE id = ${accountId}`
      expect(row.renewed).toBe(true)
    }))

  it.scoped("a reconnect ends a renewal under way: what that renewal stores afterwards changes nothing", () =>
    Effect.gen(function*() {
      const team = yield* publishingTeam(5)
      const accountId = (yield* connectX(team)).status.account.id as string
      const renewals = yield* RenewalsRepo.pipe(Effect.provide(RenewalsRepo.Default))
      const inFlight = Option.getOrThrow(yield* renewals.claimOne(accountId as never, 300))
      yield* connectX(team)
      yield* renewals.storeRenewed(inFlight, "v1.stale.renewal", null)
      yield* renewals.markRefused(inFlight, "a stale renewal's refusal")
      const account = yield* team.call("GET", `/social-accounts/${accountId}`)
      expect(account.body).toMatchObject({ status: "connected", lastError: null })
      const post = yield* team.draft("After the stale renewal")
      expect((yield* team.postNow(post.id, [accountId])).body.outcome).toBe("none_failed")
    }))

  it.scoped("a denied sign-in connects nothing", () =>
    Effect.gen(function*() {
      const team = yield* publishingTeam()
      const { page, status } = yield* connectX(team, "deny")
      expect(page.status).toBe(400)
      expect(status).toMatchObject({ status: "failed", account: null })
      expect((yield* team.call("GET", "/social-accounts")).body.data).toHaveLength(0)
    }))
})
