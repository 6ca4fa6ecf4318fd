import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { cliEnv, jsonOf, runCli } from "../support/CliProcess.js"
import { scopedTempDir } from "../support/TestDatabase.js"

/**
 * An API that answers every publish as Postline does while the first request with its Idempotency-Key still runs
 * (409, "still being processed"), for ever: what the SDK, after its in-doubt budget, fails with `PublishInDoubt`.
 */
const apiStillPublishing = Effect.acquireRelease(
  Effect.async<{ readonly url: string; readonly keys: Array<string | undefined>; readonly close: () => void }>((resume) => {
    const keys: Array<string | undefined> = []
    const server = createServer((request, response) => {
      request.resume()
      request.on("end", () => {
        if (request.method === "POST" && /^\/v1\/teams\/[^/]+\/posts\/[^/]+\/post-now$/.test(request.url ?? "")) {
          const key = request.headers["idempotency-key"]
          keys.push(Array.isArray(key) ? key[0] : key)
          response.writeHead(409, { "content-type": "application/json" }).end(JSON.stringify({
            _tag: "Conflict",
            reason: "idempotency_key_in_progress",
            message: "A request with this Idempotency-Key is still being processed: retry it later for its answer"
          }))
        } else {
          response.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ _tag: "NotFound", message: "Not here" }))
        }
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        keys,
        close: () => server.close()
      })))
  }),
  (api) => Effect.sync(() => api.close())
)

describe("postline post-now, still running on the server when the SDK stops waiting", () => {
  it.scopedLive("exits 1 with PublishInDoubt and prints the idempotency key that learns the publish's answer", () =>
    Effect.gen(function*() {
      const api = yield* apiStillPublishing
      const home = yield* scopedTempDir("postline-cli-home-")
      const cli = cliEnv(home, api.url, { POSTLINE_TOKEN: "plt_any" })
      const [teamId, postId, accountId] = [randomUUID(), randomUUID(), randomUUID()]

      // The SDK asks again for --wait seconds (two minutes unless told) before it gives up.
      const started = Date.now()
      const result = yield* runCli(["post-now", postId, "--team", teamId, "--account", accountId, "--wait", "3", "--yes", "--json"], cli)
      expect(result.code, result.stderr).toBe(1)
      expect(Date.now() - started).toBeGreaterThanOrEqual(3000)
      const key = api.keys[0]!
      expect(key).toMatch(/^[0-9a-f-]{36}$/)
      expect(api.keys.length).toBeGreaterThan(1)
      expect(new Set(api.keys)).toEqual(new Set([key]))
      expect(jsonOf(result)).toEqual({ error: { _tag: "PublishInDoubt", message: expect.stringContaining(key) } })
      expect(result.stderr).toBe(
        "The server is still publishing it and may yet succeed: to learn its answer without publishing twice, " +
          `repeat the command later with --idempotency-key ${key}\n`
      )
    }))

  it.scopedLive("takes --wait as whole seconds from 1 to 3600, and refuses anything else before calling the server", () =>
    Effect.gen(function*() {
      const api = yield* apiStillPublishing
      const home = yield* scopedTempDir("postline-cli-home-")
      const cli = cliEnv(home, api.url, { POSTLINE_TOKEN: "plt_any" })
      for (const wait of ["0", "3601", "1.5", "soon"]) {
        const result = yield* runCli(["post-now", randomUUID(), "--team", randomUUID(), "--account", randomUUID(), "--wait", wait, "--yes"], cli)
        expect(result.code, `--wait ${wait}: ${result.stderr}`).toBe(2)
        expect(result.stderr).toContain("--wait")
      }
      expect(api.keys).toEqual([])
    }))
})
