import { FetchHttpClient, HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { makeClient } from "@postline/domain"
import { Effect, Redacted } from "effect"
import { UsersRepo } from "../src/Users/Repo.js"
import { raw, signUp, TestServer } from "./support/TestServer.js"

layer(TestServer, { excludeTestServices: true })("the typed client of @postline/domain", (it) => {
  it.effect("talks to a server over HTTP with a base URL and a token", () =>
    Effect.gen(function*() {
      const { token } = yield* signUp()
      const address = (yield* HttpServer.HttpServer).address as HttpServer.TcpAddress
      const client = yield* makeClient({ baseUrl: `http://127.0.0.1:${address.port}`, token })
      const org = yield* client.organizations.createOrganization({ payload: { name: "Acme" } })
      const team = yield* client.teams.createTeam({ payload: { organizationId: org.id, name: "Marketing" } })
      const teams = yield* client.teams.listTeams({ urlParams: { organizationId: org.id } })
      expect(teams.data).toEqual([team])

      const stranger = yield* makeClient({ baseUrl: `http://127.0.0.1:${address.port}`, token: "plt_nobody" })
      const error = yield* Effect.flip(stranger.organizations.listOrganizations({ urlParams: {} }))
      expect(error._tag).toBe("Unauthorized")
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.effect("covers the device login, API keys and the agent context", () =>
    Effect.gen(function*() {
      const { user } = yield* signUp("Agent Owner")
      yield* (yield* UsersRepo).setPassword(user.email, Redacted.make("correct horse battery"))
      const address = (yield* HttpServer.HttpServer).address as HttpServer.TcpAddress
      const baseUrl = `http://127.0.0.1:${address.port}`
      const anonymous = yield* makeClient({ baseUrl, token: "" })

      const device = yield* anonymous.auth.requestDeviceCode({ payload: { client_id: "postline-cli" } })
      const pending = yield* Effect.flip(
        anonymous.auth.token({
          payload: { grant_type: "urn:ietf:params:oauth:grant-type:device_code", device_code: Redacted.make(device.device_code), client_id: "postline-cli" }
        })
      )
      expect(pending).toMatchObject({ _tag: "OAuthError", error: "authorization_pending" })
      const approval = yield* raw({
        method: "POST",
        path: "/device",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          email: user.email,
          password: "correct horse battery",
          user_code: device.user_code,
          action: "approve"
        }).toString()
      })
      expect(approval.status).toBe(200)
      // As if the polling interval had passed since the first poll.
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE device_authorizations SET last_polled_at = last_polled_at - interval '1 minute'`
      const tokens = yield* anonymous.auth.token({
        payload: { grant_type: "urn:ietf:params:oauth:grant-type:device_code", device_code: Redacted.make(device.device_code), client_id: "postline-cli" }
      })
      expect(tokens.token_type).toBe("Bearer")

      const agent = yield* makeClient({ baseUrl, token: tokens.access_token })
      const org = yield* agent.organizations.createOrganization({ payload: { name: "Agent org" } })
      const created = yield* agent.apiKeys.createApiKey({ path: { organizationId: org.id }, payload: { name: "Tool server" } })
      const keyClient = yield* makeClient({ baseUrl, token: created.key })
      const context = yield* keyClient.agent.getContext()
      expect(context.user).toBeNull()
      expect(context.organizations.data.map((o) => o.id)).toEqual([org.id])
      const defaults = yield* agent.agent.setDefaults({ payload: { organizationId: org.id, teamId: null } })
      expect(defaults).toEqual({ organizationId: org.id, teamId: null })

      const keys = yield* agent.apiKeys.listApiKeys({ path: { organizationId: org.id }, urlParams: {} })
      expect(keys.data.map((k) => k.id)).toEqual([created.id])
      const revoked = yield* agent.apiKeys.revokeApiKey({ path: { organizationId: org.id, apiKeyId: created.id } })
      expect(revoked.revokedAt).not.toBeNull()
      expect((yield* Effect.flip(keyClient.agent.getContext()))._tag).toBe("Unauthorized")

      yield* anonymous.auth.revoke({ payload: { token: Redacted.make(tokens.refresh_token) } })
      expect((yield* Effect.flip(agent.agent.getContext()))._tag).toBe("Unauthorized")
    }).pipe(Effect.provide(FetchHttpClient.layer)))
})
