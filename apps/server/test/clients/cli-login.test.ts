import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync, statSync } from "node:fs"
import * as Path from "node:path"
import { answerOf, cliEnv, jsonOf, runCli, startCli, waitUntil } from "../support/CliProcess.js"
import { decideOnDevicePage, userWithPassword } from "../support/SdkServer.js"
import { startServer } from "../support/ServerProcess.js"
import { freshDatabaseEnv, scopedTempDir } from "../support/TestDatabase.js"

describe("postline login", () => {
  it.scopedLive("logs in by device code approved on /device, stores the login 0600, acts with it (also as `mcp`), and logs out", () =>
    Effect.gen(function*() {
      const env = yield* freshDatabaseEnv
      const server = yield* startServer(env)
      const user = yield* userWithPassword(env)
      const home = yield* scopedTempDir("postline-cli-home-")
      const configHome = Path.join(home, "config")
      const cli = cliEnv(home, server.base, { XDG_CONFIG_HOME: configHome })

      // An API key in the environment does not hide who approved the login: "As" is the login's user.
      const login = yield* startCli(["login"], { ...cli, POSTLINE_API_KEY: "plk_not_a_key" })
      const instructions = yield* waitUntil("the user code", login.stderr, (text) => /enter the code: [A-Z]{4}-[A-Z]{4}/.test(text))
      const userCode = /enter the code: ([A-Z]{4}-[A-Z]{4})/.exec(instructions)![1]!
      expect(instructions).toContain(`open ${server.base}/device and enter the code: ${userCode}`)
      expect(instructions).toContain(`(or open ${server.base}/device?user_code=${userCode})`)
      expect(login.stdout()).toBe("")
      expect(yield* decideOnDevicePage(server.base, { email: user.email, password: user.password, userCode, action: "approve" }))
        .toBe(200)
      // It polls every 5 seconds (the server's interval).
      expect(yield* Effect.promise(() => login.exited)).toBe(0)
      expect(login.stdout()).toMatch(new RegExp(`^Logged in to: +${server.base}\\nAs: +Sdk User <${user.email}>\\n`))

      const credentials = Path.join(configHome, "postline", "credentials.json")
      expect(statSync(credentials).mode & 0o777).toBe(0o600)
      expect(statSync(Path.dirname(credentials)).mode & 0o777).toBe(0o700)
      const stored = JSON.parse(readFileSync(credentials, "utf8"))
      expect(stored).toMatchObject({ baseUrl: server.base, clientId: "postline-cli" })
      expect(stored.refreshToken).toMatch(/^plr_/)

      const whoami = yield* answerOf(["whoami"], cli)
      expect(whoami.user).toEqual({ id: user.id, email: user.email, name: "Sdk User" })
      expect(whoami.defaults).toEqual({ organizationId: null, teamId: null })
      const human = yield* runCli(["whoami"], cli)
      expect(human.stdout).toContain("Credentials:   login\n")

      // `postline mcp` serves the tools with the same login: the protocol alone on standard output.
      const mcp = yield* startCli(["mcp"], cli)
      const send = (message: unknown) => mcp.child.stdin.write(`${JSON.stringify(message)}\n`)
      send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "test", version: "1" } } })
      send({ jsonrpc: "2.0", method: "notifications/initialized" })
      send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_agent_context", arguments: {} } })
      const lines = yield* waitUntil("the tool's answer", () => mcp.stdout().split("\n").filter((line) => line !== ""), (all) => all.length >= 2)
      const messages = lines.map((line) => JSON.parse(line))
      expect(messages.map((message) => message.id)).toEqual([1, 2])
      expect(messages[0].result.serverInfo.name).toBe("postline")
      expect(JSON.parse(messages[1].result.content[0].text).user).toEqual(whoami.user)
      mcp.child.stdin.end()

      // Without a terminal, logging out needs --yes: the login is kept.
      const unconfirmed = yield* runCli(["logout"], cli)
      expect(unconfirmed.code).toBe(2)
      expect(unconfirmed.stderr).toMatch(/^Error \(UsageError\): Not logging out without confirmation: .*pass --yes/)
      expect(statSync(credentials).mode & 0o777).toBe(0o600)
      const logout = yield* answerOf(["logout", "--yes"], cli)
      expect(logout).toEqual({ baseUrl: server.base, loggedOut: true })
      expect(() => statSync(credentials)).toThrow()
      // Revoked on the server: the refresh token no longer works.
      const refresh = yield* Effect.promise(() =>
        fetch(`${server.base}/v1/auth/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: stored.refreshToken, client_id: "postline-cli" })
        }).then((response) => response.json() as Promise<{ error?: string }>)
      )
      expect(refresh.error).toBe("invalid_grant")

      const after = yield* runCli(["whoami"], cli)
      expect(after.code).toBe(3)
      expect(after.stdout).toBe("")
      expect(after.stderr).toMatch(/^Error \(NotConfigured\): No Postline credentials: .*run `postline login`\n$/)
      const afterJson = yield* runCli(["whoami", "--json"], cli)
      expect(afterJson.code).toBe(3)
      expect(jsonOf(afterJson)).toEqual({ error: { _tag: "NotConfigured", message: expect.stringContaining("postline login") } })
      expect(jsonOf(yield* runCli(["logout", "--json"], cli))).toEqual({ baseUrl: null, loggedOut: false })
    }))
})
