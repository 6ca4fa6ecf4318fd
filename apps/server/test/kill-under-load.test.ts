import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createUserWithToken, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"

/** Creates organizations from `workers` loops until `stop()`; returns the ids the server acknowledged. */
const writeUntilStopped = (base: string, token: string, workers: number) => {
  const acknowledged: Array<string> = []
  let stopped = false
  const loops = Array.from({ length: workers }, async (_, worker) => {
    for (let i = 0; !stopped; i++) {
      try {
        const response = await fetch(`${base}/v1/organizations`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ name: `Written ${worker}-${i}` })
        })
        if (response.status === 201) acknowledged.push(((await response.json()) as { id: string }).id)
      } catch {
        // the connection died with the process: not acknowledged
      }
    }
  })
  return { acknowledged, stop: () => (stopped = true, Promise.all(loops)) }
}

describe("a server killed with SIGKILL under write load", () => {
  it.scopedLive("loses no write it acknowledged", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabaseEnv
      const { token } = yield* createUserWithToken(database)
      const first = yield* startServer(database)
      const load = writeUntilStopped(first.base, token, 4)
      yield* Effect.sleep("2 seconds")
      first.child.kill("SIGKILL")
      yield* Effect.promise(() => first.exited)
      yield* Effect.promise(load.stop)
      expect(load.acknowledged.length).toBeGreaterThan(5)

      const second = yield* startServer(database)
      const missing = yield* Effect.promise(async () => {
        const lost: Array<string> = []
        for (const id of load.acknowledged) {
          const response = await fetch(`${second.base}/v1/organizations/${id}`, {
            headers: { authorization: `Bearer ${token}` }
          })
          if (response.status !== 200) lost.push(`${id}: ${response.status}`)
        }
        return lost
      })
      expect(missing).toEqual([])
    }))
})
