import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { answerOf, cliEnv, jsonOf, publishing, runCli, userWithTeam } from "../support/CliProcess.js"
import { grantCredits } from "../support/ProcessPublishing.js"
import { createUserWithToken } from "../support/ServerProcess.js"

describe("postline's exit codes", () => {
  it.scopedLive("exits 4 for an unknown post, 6 without credits, 3 for a refused token, 2 for bad options and without a terminal or --yes", () =>
    Effect.gen(function*() {
      const { env, home, receiver, server } = yield* publishing()
      const { call, teamId, token } = yield* userWithTeam(env, server, 0)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })
      const account = yield* answerOf(["accounts", "connect", "--webhook", receiver.url, "--team", teamId], cli)
      const post = yield* answerOf(["posts", "create", "--text", "Never sent", "--account", account.id], cli)

      const unknown = yield* runCli(["posts", "show", "00000000-0000-4000-8000-000000000000", "--json"], cli)
      expect(unknown.code).toBe(4)
      expect(jsonOf(unknown)).toEqual({ error: { _tag: "NotFound", message: expect.any(String) } })
      const unknownText = yield* runCli(["posts", "show", "00000000-0000-4000-8000-000000000000"], cli)
      expect(unknownText).toMatchObject({ code: 4, stdout: "" })
      expect(unknownText.stderr).toMatch(/^Error \(NotFound\): .+\n$/)

      const broke = yield* runCli(["post-now", post.id, "--yes", "--json"], cli)
      expect(broke.code).toBe(6)
      expect(jsonOf(broke)).toEqual({ error: { _tag: "PaymentRequired", message: expect.any(String) } })

      const refused = yield* runCli(["whoami"], { ...cli, POSTLINE_TOKEN: "plt_not_a_token" })
      expect(refused.code).toBe(3)
      expect(refused.stderr).toMatch(/^Error \(Unauthorized\): /)

      const badLimit = yield* runCli(["posts", "list", "--limit", "0"], cli)
      expect(badLimit.code).toBe(2)
      expect(badLimit.stderr).toContain("--limit must be a positive integer")
      const badId = yield* runCli(["posts", "show", "not-a-uuid", "--json"], cli)
      expect(badId.code).toBe(2)
      expect(jsonOf(badId)).toEqual({ error: { _tag: "ValidationError", message: "<postId> must be a UUID (8-4-4-4-12 hexadecimal digits)" } })
      expect((yield* runCli(["posts", "list", "--bogus"], cli)).code).toBe(2)
      expect((yield* runCli(["posts"], cli)).code).toBe(2)

      // Standard input is a pipe here, not a terminal: nothing is asked, and nothing is done.
      yield* grantCredits(env, (yield* call("GET", `/v1/teams/${teamId}`)).body.organizationId, 3)
      for (const args of [["post-now", post.id], ["schedule", post.id, "--next-slot"], ["posts", "delete", post.id]]) {
        const unconfirmed = yield* runCli(args, cli)
        expect(unconfirmed.code, args.join(" ")).toBe(2)
        expect(unconfirmed.stdout).toBe("")
        expect(unconfirmed.stderr).toMatch(/^Error \(UsageError\): .*standard input is not a terminal, so pass --yes to proceed without asking\n$/)
      }
      expect(receiver.received).toHaveLength(0)
      expect((yield* call("GET", `/v1/teams/${teamId}/posts/${post.id}`)).body.status).toBe("draft")
    }), 240_000)

  it.scopedLive("exits 7 when the server limits the caller's requests", () =>
    Effect.gen(function*() {
      // Two requests an hour: the third is refused with a Retry-After longer than the SDK waits for.
      const { env, home, server } = yield* publishing({ RATE_LIMIT_REQUESTS: "2", RATE_LIMIT_WINDOW_SECONDS: "3600" })
      const { token } = yield* createUserWithToken(env)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })
      expect((yield* runCli(["whoami"], cli)).code).toBe(0)
      expect((yield* runCli(["whoami"], cli)).code).toBe(0)
      const limited = yield* runCli(["whoami", "--json"], cli)
      expect(limited.code).toBe(7)
      expect(jsonOf(limited)).toEqual({ error: { _tag: "TooManyRequests", message: expect.any(String) } })
    }), 240_000)
})
