import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { grantCredits, publishEnv } from "./support/ProcessPublishing.js"
import { callsAs, createUserWithToken, type ProcessResponse, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, testDatabaseKind } from "./support/TestDatabase.js"
import { consentAtX, makeXFake } from "./support/XFake.js"

const created = (answer: ProcessResponse) => {
  if (answer.status !== 201) throw new Error(`setup failed: ${answer.status} ${answer.text}`)
  return answer.body
}

describe("renewing X's tokens from two server processes", () => {
  it.scopedLive.skipIf(testDatabaseKind !== "postgres")(
    "each renewal is made by one process: X's rotating refresh tokens never used twice, the grant alive, the newest kept",
    () =>
      Effect.gen(function*() {
        // Tokens of 4 seconds, renewed when 2 are left, by workers that look every 100 ms: many rounds of both
        // processes meet each token due.
        const fake = yield* makeXFake({ accessTokenSeconds: 4 })
        const env = publishEnv(yield* freshDatabaseEnv, {
          X_CLIENT_ID: fake.clientId,
          X_CLIENT_SECRET: fake.clientSecret,
          X_API_URL: fake.url,
          X_AUTHORIZE_URL: fake.authorizeUrl,
          TOKEN_RENEWAL_POLL_MS: "100",
          TOKEN_RENEWAL_AHEAD_SECONDS: "2",
          CREDIT_COSTS: JSON.stringify({ x: 1 })
        })
        const { token } = yield* createUserWithToken(env)
        const [one, two] = yield* Effect.all([startServer(env), startServer(env)], { concurrency: 2 })
        for (const server of [one, two]) fake.registerRedirectUri(`${server.base}/v1/oauth/callback/x`)
        const call = callsAs(one, token)
        const organization = created(yield* call("POST", "/v1/organizations", { name: "Renewed" }))
        const team = created(yield* call("POST", "/v1/teams", { organizationId: organization.id, name: "Social" }))
        yield* grantCredits(env, organization.id, 10)

        const started = created(yield* call("POST", `/v1/teams/${team.id}/social-accounts/connect`, { provider: "x" }))
        const back = yield* consentAtX(started.authorizationUrl, "allow")
        const page = yield* Effect.promise(() => fetch(back).then((response) => response.status))
        expect(page).toBe(200)
        const { account } = (yield* call("GET", `/v1/teams/${team.id}/social-accounts/connect/${started.connectId}`)).body
        expect(account).toMatchObject({ provider: "x", status: "connected" })
        const [grant] = fake.grants

        // Until X has renewed the grant five times, whatever the machine's pace.
        while (grant.refreshCount < 5 && !grant.revoked) yield* Effect.sleep("200 millis")
        expect(grant.revoked).toBe(false)
        expect(new Set(grant.spentRefreshTokens).size).toBe(grant.spentRefreshTokens.length)

        // What was stored is the newest: both processes publish with it, renewing it first when due.
        const post = created(yield* call("POST", `/v1/teams/${team.id}/posts`, { content: "After five renewals" }))
        const sent = yield* callsAs(two, token)("POST", `/v1/teams/${team.id}/posts/${post.id}/post-now`, { socialAccountIds: [account.id] })
        expect(sent.body.outcome, sent.text).toBe("none_failed")
        expect(grant.revoked).toBe(false)
        const checked = yield* call("GET", `/v1/teams/${team.id}/social-accounts/${account.id}`)
        expect(checked.body).toMatchObject({ status: "connected", lastError: null })
        for (const server of [one, two]) expect(server.lines.join("\n")).not.toContain("Renewing the tokens")
      })
  )
})
