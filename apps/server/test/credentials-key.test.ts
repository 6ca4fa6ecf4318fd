import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { statSync } from "node:fs"
import * as Path from "node:path"
import { freePort, spawnServer, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv, testDatabaseKind } from "./support/TestDatabase.js"

const credentialsKeyLogs = (lines: ReadonlyArray<string>) =>
  lines.filter((line) => line.includes("Generated a credentials key"))

describe("the credentials key", () => {
  it.scopedLive.skipIf(testDatabaseKind !== "postgres")(
    "with DATABASE_URL and no CREDENTIALS_KEY, the server refuses to start with one FATAL line",
    () =>
      Effect.gen(function*() {
        const { CREDENTIALS_KEY: _, ...withoutKey } = yield* freshDatabaseEnv
        const server = spawnServer({ ...withoutKey, PORT: String(yield* freePort) })
        expect(yield* Effect.promise(() => server.exited)).toBe(1)
        const lines = server.lines.filter((line) => line.length > 0).map((line) => JSON.parse(line))
        expect(lines).toEqual([
          expect.objectContaining({ logLevel: "FATAL", message: "The server could not start", cause: expect.stringContaining("CREDENTIALS_KEY is not set") })
        ])
      }),
    60_000
  )

  it.scopedLive.skipIf(testDatabaseKind !== "embedded")(
    "with the embedded database and no key, one is made in the data folder (mode 0600) and said once",
    () =>
      Effect.gen(function*() {
        const env = yield* freshDatabaseEnv
        const first = yield* startServer({ ...env, LOG_LEVEL: "WARN" })
        const file = Path.join(env.DATA_DIR!, "credentials.key")
        expect(statSync(file).mode & 0o777).toBe(0o600)
        expect(credentialsKeyLogs(first.lines)).toHaveLength(1)
        first.child.kill("SIGTERM")
        yield* Effect.promise(() => first.exited)
        const again = yield* startServer({ ...env, LOG_LEVEL: "WARN" })
        expect(credentialsKeyLogs(again.lines)).toEqual([])
      }),
    60_000
  )
})
