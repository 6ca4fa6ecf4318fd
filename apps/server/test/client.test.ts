import { FetchHttpClient, HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { makeClient } from "@postline/domain"
import { Effect } from "effect"
import { signUp, TestServer } from "./support/TestServer.js"

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
})
