import { expect, layer } from "@effect/vitest"
import { Effect, HashMap, Layer, Logger } from "effect"
import { makeHttpLive } from "../src/Api.js"
import { SoleProcess } from "../src/Database/SoleProcess.js"
import { SchedulerLive } from "../src/Workers.js"
import { UsersRepo } from "../src/Users/Repo.js"
import { download, noisyPng, upload } from "./support/Media.js"
import { LocalOAuthNetworks, LocalProviders } from "./support/Providers.js"
import { TestDatabase } from "./support/TestDatabase.js"
import { InProcessHttpServer, raw, signUp, TestCipher } from "./support/TestServer.js"
import { freshTestStorage } from "./support/TestStorage.js"

// What the server logs, the access log included.
const logged: Array<{ readonly message: unknown; readonly annotations: Record<string, unknown> }> = []
const capturingLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ annotations, message }) => void logged.push({ message, annotations: Object.fromEntries(HashMap.toEntries(annotations)) }))
)

/**
 * The access log's lines for `path` once there are `count`: a line is logged once its response has been sent,
 * which its client may have read before.
 */
const accessLines = (path: string, count: number) =>
  Effect.gen(function*() {
    for (;;) {
      const lines = logged.filter(({ annotations }) => annotations["http.url"] === path)
      if (lines.length >= count) return lines
      yield* Effect.sleep("20 millis")
    }
  }).pipe(
    Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error(`fewer than ${count} access log lines for ${path}`) })
  )

const LoggingServer = makeHttpLive({ accessLog: true }).pipe(
  Layer.provideMerge(InProcessHttpServer),
  Layer.provideMerge(UsersRepo.Default),
  Layer.provide(SchedulerLive.pipe(Layer.provide(Layer.succeed(SoleProcess, true)))),
  Layer.provide(LocalOAuthNetworks),
  Layer.provide([LocalProviders, TestCipher, freshTestStorage("filesystem")]),
  Layer.provideMerge(TestDatabase),
  Layer.provide(capturingLogger)
)

layer(LoggingServer, { excludeTestServices: true })("the access log and signed URLs", (it) => {
  it.effect("a download by signed URL is logged by its path: its signature, which would let a reader download, never is", () =>
    Effect.gen(function*() {
      const admin = yield* signUp()
      const organization = yield* admin.client.organizations.createOrganization({ payload: { name: "Acme" } })
      const team = yield* admin.client.teams.createTeam({ payload: { organizationId: organization.id, name: "Social" } })
      const { body: asset } = yield* upload({ token: admin.token, teamId: team.id, bytes: yield* noisyPng(10, 10) })
      const path = asset.url.split("?")[0]!
      expect((yield* download(asset.url)).status).toBe(200)
      yield* accessLines(path, 1)
      const forged = asset.url.replace(/signature=[^&]+/, "signature=forged")
      expect((yield* download(forged)).status).toBe(403)
      const lines = yield* accessLines(path, 2)
      expect(lines.map(({ annotations }) => annotations["http.status"])).toEqual([200, 403])
      const signature = new URL(asset.url, "http://server").searchParams.get("signature")!
      expect(JSON.stringify(logged)).not.toContain(signature)
      // Other requests keep their query string in the log.
      const listed = `/v1/teams/${team.id}/assets?limit=5`
      expect((yield* raw({ method: "GET", path: listed, token: admin.token })).status).toBe(200)
      expect(yield* accessLines(listed, 1)).toHaveLength(1)
    }))
})
