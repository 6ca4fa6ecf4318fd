import { HttpServer } from "@effect/platform"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { clientFolder, generateClient } from "../scripts/openapi-client.js"
import { createClient, createConfig } from "./generated/openapi-client/client/index.js"
import {
  apiKeysCreateApiKey,
  organizationsCreateOrganization,
  organizationsListOrganizations,
  teamsCreateTeam,
  teamsListTeams,
  teamsUpdateTeam
} from "./generated/openapi-client/index.js"
import { signUp, TestServer } from "./support/TestServer.js"

/**
 * A third party's client: @hey-api/openapi-ts's fetch client with zod validators of every request
 * and answer, generated from openapi.json alone (committed in test/generated/openapi-client).
 */

const filesUnder = (folder: string): Array<string> =>
  readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => Path.relative(folder, Path.join(entry.parentPath, entry.name)))
    .sort()

describe("the client @hey-api/openapi-ts generates", () => {
  it("is committed as generated from openapi.json: run `pnpm openapi:client` after `pnpm openapi`", async () => {
    const output = mkdtempSync(Path.join(tmpdir(), "postline-client-"))
    try {
      await generateClient(output)
      expect(filesUnder(clientFolder)).toEqual(filesUnder(output))
      for (const file of filesUnder(output)) {
        expect(readFileSync(Path.join(clientFolder, file), "utf8"), file).toBe(readFileSync(Path.join(output, file), "utf8"))
      }
    } finally {
      rmSync(output, { recursive: true, force: true })
    }
  })
})

/** An instant a year ahead, written with a +02:00 offset as a client in Paris would. */
const aYearAheadInParis = () => {
  const local = new Date(Date.now() + 365 * 24 * 3600 * 1000 + 2 * 3600 * 1000)
  return local.toISOString().replace(/\.\d{3}Z$/, "+02:00")
}

layer(TestServer, { excludeTestServices: true })("the generated client against the server", (it) => {
  it.effect("creates organizations, pages through them both ways, creates and updates a team, and uses an API key", () =>
    Effect.gen(function*() {
      const { token } = yield* signUp()
      const address = (yield* HttpServer.HttpServer).address as HttpServer.TcpAddress
      const baseUrl = `http://127.0.0.1:${address.port}`
      const client = createClient(createConfig({ baseUrl, auth: () => token }))

      yield* Effect.promise(async () => {
        const created = []
        for (const name of ["Acme", "Globex", "Initech"]) {
          const { data } = await organizationsCreateOrganization({ client, body: { name }, throwOnError: true })
          created.push(data)
        }
        const [acme] = created

        const query = { limit: "2", sortBy: "name", sortOrder: "asc" } as const
        const first = (await organizationsListOrganizations({ client, query, throwOnError: true })).data
        expect(first.data.map((organization) => organization.name)).toEqual(["Acme", "Globex"])
        expect(first.total).toBe(3)
        const second = (await organizationsListOrganizations({
          client,
          query: { ...query, cursor: first.nextCursor! },
          throwOnError: true
        })).data
        expect(second.data.map((organization) => organization.name)).toEqual(["Initech"])
        expect(second.nextCursor).toBeNull()
        const back = (await organizationsListOrganizations({
          client,
          query: { ...query, cursor: second.prevCursor! },
          throwOnError: true
        })).data
        expect(back.data).toEqual(first.data)

        // The document's pattern travels into the client: it refuses limit 0 before sending it.
        await expect(organizationsListOrganizations({ client, query: { limit: "0" }, throwOnError: true }))
          .rejects.toThrow(/"limit"[\s\S]*must match pattern/)

        const team = (await teamsCreateTeam({
          client,
          body: { organizationId: acme.id, name: "Marketing", timezone: "Europe/Paris" },
          throwOnError: true
        })).data
        expect(team).toMatchObject({ name: "Marketing", timezone: "Europe/Paris", website: null })
        const updated = (await teamsUpdateTeam({
          client,
          path: { teamId: team.id },
          body: { name: "Brand", website: "https://example.com/brand", timezone: null },
          throwOnError: true
        })).data
        expect(updated).toMatchObject({ id: team.id, name: "Brand", website: "https://example.com/brand", timezone: null })

        const expiresAt = aYearAheadInParis()
        const key = (await apiKeysCreateApiKey({
          client,
          path: { organizationId: acme.id },
          body: { name: "CI publisher", expiresAt },
          throwOnError: true
        })).data
        expect(Date.parse(key.expiresAt!)).toBe(Date.parse(expiresAt))

        const asKey = createClient(createConfig({ baseUrl, auth: () => key.key }))
        const teams = (await teamsListTeams({ client: asKey, throwOnError: true })).data
        expect(teams.data.map((listed) => listed.id)).toEqual([team.id])
      })
    }))
})
