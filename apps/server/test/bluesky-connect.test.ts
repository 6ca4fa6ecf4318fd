import { describe, expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { BlueskyOAuthSettings } from "../src/Providers/BlueskyOAuthClient.js"
import { XSettings } from "../src/Providers/XSettings.js"
import { TokenRenewal } from "../src/SocialAccounts/TokenRenewal.js"
import { BlueskyNetwork } from "./support/BlueskyNetwork.js"
import { Chromium, inPage, watchedPage, withChromium } from "./support/Browser.js"
import { localOAuthNetworksWith, localProvidersWith } from "./support/Providers.js"
import { publishingTeam } from "./support/Publishing.js"
import { makeTestServer } from "./support/TestServer.js"
import { freshTestStorage } from "./support/TestStorage.js"

/**
 * A server that signs in to the local AT Protocol network (its PLC, its PDS with its own OAuth provider) as atproto's
 * loopback client: the test server is reached at 127.0.0.1, as a developer's own server is.
 */
const Server = Layer.unwrapEffect(Effect.map(BlueskyNetwork, (network) => {
  const bluesky = Layer.succeed(BlueskyOAuthSettings, BlueskyOAuthSettings.make({
    publicOrigin: null,
    privateKey: null,
    plcDirectoryUrl: network.plcUrl,
    handleResolver: network.serviceUrl,
    allowHttp: true
  }))
  return makeTestServer(
    Logger.minimumLogLevel(LogLevel.Error),
    localProvidersWith(XSettings.Default, bluesky),
    freshTestStorage("filesystem"),
    localOAuthNetworksWith(XSettings.Default, bluesky)
  )
})).pipe(Layer.provideMerge(BlueskyNetwork.layer()), Layer.merge(Chromium.Live))

type Team = Effect.Effect.Success<ReturnType<typeof publishingTeam>>

/**
 * The whole connect as a person does it in Chromium: Postline's link opens the PDS's sign-in page, where they give
 * their password and authorize; the PDS sends the browser back to Postline's callback page.
 */
const connectInBrowser = (team: Team, handle: string, password: string) =>
  Effect.gen(function*() {
    const network = yield* BlueskyNetwork
    const started = yield* team.call("POST", "/social-accounts/connect", { provider: "bluesky", handle })
    expect(started.status, JSON.stringify(started.body)).toBe(201)
    expect(started.body.authorizationUrl.startsWith(`${network.serviceUrl}/oauth/authorize?`)).toBe(true)
    const { page, problems } = yield* watchedPage({}, [network.serviceUrl])
    yield* inPage(async () => {
      await page.goto(started.body.authorizationUrl)
      await page.locator("input[name=\"password\"]").fill(password)
      await page.getByRole("button", { name: /^sign in$/i }).click()
      await page.getByRole("button", { name: /^authorize$/i }).click()
      await page.waitForURL(/\/v1\/oauth\/callback\/bluesky\?/)
      await page.getByRole("heading", { name: "Account connected" }).waitFor()
    })
    const text = yield* inPage(() => page.locator("main").innerText())
    const status = yield* team.call("GET", `/social-accounts/connect/${started.body.connectId}`)
    return { text, problems, status: status.body }
  })

describe.skipIf(!withChromium)("Bluesky by signing in at the PDS", () => {
  layer(Server, { excludeTestServices: true })("atproto OAuth against the PDS of @atproto/dev-env", (it) => {
    it.scoped("consent in Chromium connects the account; it publishes, renews its tokens and publishes again; a second sign-in updates it", () =>
      Effect.gen(function*() {
        const network = yield* BlueskyNetwork
        const pds = yield* Effect.promise(() => network.createAccount({ displayName: "Oda Auth" }))
        const team = yield* publishingTeam(10)
        const { problems, status, text } = yield* connectInBrowser(team, pds.handle, pds.password)
        expect(problems).toEqual({ consoleErrors: [], pageErrors: [], requestsElsewhere: [], documentErrorStatuses: [] })
        expect(text).toContain(pds.handle)
        expect(status).toMatchObject({ status: "connected", account: { provider: "bluesky", handle: pds.handle, displayName: "Oda Auth" } })
        const accountId = status.account.id as string

        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ credentials: string; network_user_id: string }>`SELECT credentials, network_user_id
          FROM social_accounts WHERE id = ${accountId}`
        expect(row.network_user_id).toBe(pds.did)
        expect(row.credentials).not.toContain("refresh_token")

        const first = yield* team.draft("Signed in with atproto OAuth")
        const sent = yield* team.postNow(first.id, [accountId])
        expect(sent.body.outcome, JSON.stringify(sent.body)).toBe("none_failed")
        const uri = (yield* team.call("GET", `/posts/${first.id}`)).body.targets[0].externalId as string
        expect((yield* Effect.promise(() => network.getRecord(uri))).text).toBe("Signed in with atproto OAuth")

        // Due now: renewed (the PDS rotates its refresh tokens), and the renewed session publishes.
        yield* sql`UPDATE social_accounts SET token_expires_at = now() WHERE id = ${accountId}`
        yield* (yield* TokenRenewal).renewDue
        const [renewed] = yield* sql<{ fresh: boolean; credentials: string }>`SELECT token_expires_at > now() + interval '10 minutes' AS fresh,
          credentials FROM social_accounts WHERE id = ${accountId}`
        expect(renewed.fresh).toBe(true)
        expect(renewed.credentials).not.toBe(row.credentials)
        const second = yield* team.draft("After renewing")
        expect((yield* team.postNow(second.id, [accountId])).body.outcome).toBe("none_failed")

        const again = yield* connectInBrowser(team, pds.handle, pds.password)
        expect(again.status.account.id).toBe(accountId)
        expect((yield* team.call("GET", "/social-accounts")).body.data).toHaveLength(1)
      }))
  })
})
