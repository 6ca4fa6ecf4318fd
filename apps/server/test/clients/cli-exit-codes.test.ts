import { expect, layer } from "@effect/vitest"
import { maxTargetsPerPublish } from "@postline/domain"
import { Effect } from "effect"
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { answerOf, cliEnv, FileServer, jsonOf, publishing, publishingOnFileServer, runCli, userWithTeam } from "../support/CliProcess.js"
import { grantCredits } from "../support/ProcessPublishing.js"
import { createUserWithToken } from "../support/ServerProcess.js"

const cliReadme = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "../../../cli/README.md")

layer(FileServer.Live, { excludeTestServices: true })("postline's exit codes", (it) => {
  it.scoped("exits 4 for an unknown post, 6 without credits, 3 for a refused token, 2 for bad options", () =>
    Effect.gen(function*() {
      const { env, home, receiver, server } = yield* publishingOnFileServer
      const { teamId, token } = yield* userWithTeam(env, server, 0)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })
      const account = yield* answerOf(["accounts", "connect", "--webhook", receiver.url, "--team", teamId, "--yes"], cli)
      const post = yield* answerOf(["posts", "create", "--text", "Never sent", "--account", account.id, "--yes"], cli)

      const unknown = yield* runCli(["posts", "show", "00000000-0000-4000-8000-000000000000", "--json"], cli)
      expect(unknown.code).toBe(4)
      expect(jsonOf(unknown)).toEqual({ error: { _tag: "NotFound", message: expect.any(String) } })
      const unknownText = yield* runCli(["posts", "show", "00000000-0000-4000-8000-000000000000"], cli)
      expect(unknownText).toMatchObject({ code: 4, stdout: "" })
      expect(unknownText.stderr).toMatch(/^Error \(NotFound\): .+\n$/)

      const broke = yield* runCli(["post-now", post.id, "--yes", "--json"], cli)
      expect(broke.code).toBe(6)
      expect(jsonOf(broke)).toEqual({ error: { _tag: "PaymentRequired", reason: "insufficient_credits", message: expect.any(String) } })

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
    }))

  it.scoped("shows the server's reason after the _tag, and exits 8, not 6, when the month's spend cap stops a publish", () =>
    Effect.gen(function*() {
      const { env, home, receiver, server } = yield* publishingOnFileServer
      const { call, organizationId, token } = yield* userWithTeam(env, server, 0)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })
      const first = yield* answerOf(["accounts", "connect", "--webhook", `${receiver.url}/first`, "--yes"], cli)
      const second = yield* answerOf(["accounts", "connect", "--webhook", `${receiver.url}/second`, "--yes"], cli)
      const post = yield* answerOf(["posts", "create", "--text", "Capped", "--yes"], cli)
      const publish = ["post-now", post.id, "--account", first.id, "--account", second.id, "--yes"]

      // --yes asks the server itself: its 402 and reason, as people and scripts read them.
      const broke = yield* runCli(publish, cli)
      expect(broke).toMatchObject({ code: 6, stdout: "" })
      expect(broke.stderr).toMatch(/^Error \(PaymentRequired: insufficient_credits\): Publishing needs 2 credits /)

      yield* grantCredits(env, organizationId, 5)
      expect((yield* call("PATCH", `/v1/organizations/${organizationId}/billing/spend-cap`, { monthlyCredits: 1 })).status).toBe(200)
      const capped = yield* runCli([...publish, "--json"], cli)
      expect(capped.code).toBe(8)
      expect(jsonOf(capped)).toEqual({
        error: { _tag: "PaymentRequired", reason: "spend_cap_reached", message: expect.stringContaining("monthly spend cap of 1 credit") }
      })
      expect(receiver.received).toHaveLength(0)
    }))

  it.scoped("exits 2 for every change without a terminal or --yes, doing nothing, and for an OAuth endpoint's 400", () =>
    Effect.gen(function*() {
      const { env, home, receiver, server } = yield* publishingOnFileServer
      const { call, teamId, token } = yield* userWithTeam(env, server, 0)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })
      const account = yield* answerOf(["accounts", "connect", "--webhook", receiver.url, "--yes"], cli)
      const post = yield* answerOf(["posts", "create", "--text", "Never sent", "--account", account.id, "--yes"], cli)

      // Standard input is a pipe here, not a terminal: nothing is asked, and nothing is done, though the credits
      // would pay for the publish.
      const organizationId = (yield* call("GET", `/v1/teams/${teamId}`)).body.organizationId
      yield* grantCredits(env, organizationId, 3)
      const otherOrganization = (yield* call("POST", "/v1/organizations", { name: "Other" })).body.id
      const image = Path.join(home, "image.png")
      writeFileSync(image, "not read before the confirmation")
      for (const args of [
        ["post-now", post.id],
        ["schedule", post.id, "--next-slot"],
        ["unschedule", post.id],
        ["analytics", "refresh", "--post", post.id],
        ["billing", "spend-cap", "100"],
        ["posts", "delete", post.id],
        ["posts", "create", "--text", "Not created"],
        ["accounts", "connect", "--webhook", `${receiver.url}/other`],
        ["accounts", "connect", "--mastodon", receiver.url],
        ["accounts", "verify", account.id],
        ["media", "upload", image],
        ["context", "use", "--org", otherOrganization]
      ]) {
        const unconfirmed = yield* runCli(args, cli)
        expect(unconfirmed.code, args.join(" ")).toBe(2)
        expect(unconfirmed.stdout).toBe("")
        expect(unconfirmed.stderr).toMatch(/^Error \(UsageError\): .*standard input is not a terminal, so pass --yes to proceed without asking\n$/)
      }
      expect(receiver.received).toHaveLength(0)
      expect((yield* call("GET", `/v1/teams/${teamId}/posts/${post.id}`)).body.status).toBe("draft")
      expect((yield* call("GET", `/v1/teams/${teamId}/posts`)).body.data.map((item: { id: string }) => item.id)).toEqual([post.id])
      expect((yield* call("GET", `/v1/teams/${teamId}/social-accounts`)).body.data.map((item: { id: string }) => item.id))
        .toEqual([account.id])
      expect((yield* call("GET", `/v1/teams/${teamId}/assets`)).body.data).toEqual([])
      expect((yield* call("GET", "/v1/agent/context")).body.defaults).toEqual({ organizationId, teamId })
      expect((yield* call("GET", `/v1/organizations/${organizationId}/billing`)).body.account.spendCap.monthlyCredits).toBeNull()

      // An OAuth endpoint's 400: a stored "login" whose refresh token is an API key, which /v1/auth/revoke refuses.
      const credentials = Path.join(home, ".config", "postline", "credentials.json")
      mkdirSync(Path.dirname(credentials), { recursive: true, mode: 0o700 })
      writeFileSync(credentials, JSON.stringify({
        baseUrl: server.base,
        clientId: "postline-cli",
        accessToken: "plt_not_a_token",
        refreshToken: "plk_not_a_refresh_token",
        accessTokenExpiresAt: new Date(Date.now() + 3_600_000).toISOString()
      }), { mode: 0o600 })
      const refusedLogout = yield* runCli(["logout", "--yes", "--json"], cli)
      expect(refusedLogout.code).toBe(2)
      expect(jsonOf(refusedLogout)).toEqual({ error: { _tag: "OAuthError", message: expect.stringContaining("API keys") } })
      expect(statSync(credentials).isFile()).toBe(true)
    }))

  it.scoped("exits 2 when a publish would go to more accounts than it takes, naming --account, before sending anything", () =>
    Effect.gen(function*() {
      const { env, home, receiver, server } = yield* publishingOnFileServer
      const { call, teamId, token } = yield* userWithTeam(env, server, 0)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })
      const accountIds: Array<string> = []
      for (let i = 0; i <= maxTargetsPerPublish; i++) {
        const connected = yield* call("POST", `/v1/teams/${teamId}/social-accounts`, { provider: "webhook", url: `${receiver.url}/${i}` })
        expect(connected.status).toBe(201)
        accountIds.push(connected.body.id)
      }
      const post = yield* answerOf(["posts", "create", "--text", "To too many", "--yes"], cli)

      // No --account: the team's 51 connected accounts are one more than a publish takes.
      for (const args of [["post-now", post.id, "--yes", "--json"], ["estimate", post.id, "--json"]]) {
        const tooMany = yield* runCli(args, cli)
        expect(tooMany.code, args.join(" ")).toBe(2)
        expect(jsonOf(tooMany)).toEqual({
          error: {
            _tag: "UsageError",
            message: `The team has more than ${maxTargetsPerPublish} connected accounts, more than one publish takes: ` +
              `pass --account for each account to publish to (at most ${maxTargetsPerPublish})`
          }
        })
      }
      // Given all 51, the request is refused by the API's schema before it is sent.
      const given = yield* runCli(["post-now", post.id, ...accountIds.flatMap((id) => ["--account", id]), "--yes", "--json"], cli)
      expect(given.code).toBe(2)
      expect(jsonOf(given)).toEqual({
        error: { _tag: "ParseError", message: expect.stringContaining(`must be 1 to ${maxTargetsPerPublish} distinct social account ids`) }
      })
      expect(given.stderr).toBe("")
      expect(receiver.received).toHaveLength(0)
      expect((yield* call("GET", `/v1/teams/${teamId}/posts/${post.id}`)).body.status).toBe("draft")
    }))

  it.effect("lists the same exit codes in `postline --help` and in apps/cli/README.md", () =>
    Effect.gen(function*() {
      const help = yield* runCli(["--help"], { PATH: process.env.PATH ?? "" })
      expect(help.code).toBe(0)
      const helpRows = help.stdout.slice(help.stdout.indexOf("EXIT CODES")).split("\n")
        .map((line) => /^(\d)  (.+) \[(.+)\]$|^(\d)  (.+)$/.exec(line))
        .filter((match) => match !== null)
        .map((match) => [match[1] ?? match[4], match[2] ?? match[5], match[3] === undefined ? "" : match[3].split(", ").map((tag) => `\`${tag}\``).join(", ")])
      const readmeRows = readFileSync(cliReadme, "utf8").split("\n")
        .map((line) => /^\| (\d) \| (.+) \| (.*) \|$/.exec(line))
        .filter((match) => match !== null)
        .map((match) => [match[1], match[2], match[3]])
      expect(helpRows.map(([code]) => code)).toEqual(["0", "2", "3", "4", "5", "6", "7", "8", "1"])
      expect(helpRows.find(([code]) => code === "8")?.[2]).toBe("`PaymentRequired: spend_cap_reached`")
      expect(readmeRows).toEqual(helpRows)
    }))

  it.scoped("exits 7 when the server limits the caller's requests", () =>
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
    }))
})
