import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import {
  cliEnv,
  cliInTmux,
  FileServer,
  jsonOf,
  publishing,
  publishingOnFileServer,
  runCli,
  startCli,
  tmuxAvailable,
  userWithTeam,
  waitUntil
} from "../support/CliProcess.js"
import { consentAtMastodon, makeMastodonFake } from "../support/MastodonFake.js"
import type { ServerProcess } from "../support/ServerProcess.js"
import { scopedTempDir } from "../support/TestDatabase.js"
import { consentAtX, makeXFake } from "../support/XFake.js"

const tmuxMissing = !tmuxAvailable
if (tmuxMissing && !process.env.CI) {
  console.warn("\ntmux is not installed: SKIPPING the CLI's sign-in connect tests (CI runs them).\n")
}

/** cliInTmux's pane is 200 columns wide: a longer line goes on over the lines below it. */
const paneWidth = 200

/** The link the CLI printed on a line of its own, whole again where the pane wrapped it. */
const linkIn = (pane: string) => {
  const lines = pane.split("\n")
  const first = lines.findIndex((line) => /^https?:\/\//.test(line))
  expect(first, pane).toBeGreaterThanOrEqual(0)
  let link = lines[first]!
  for (let next = first + 1; lines[next - 1]!.length === paneWidth && !/\s/.test(lines[next] ?? " "); next++) link += lines[next]
  return link
}

/**
 * A desktop session whose browser is a script: `xdg-open` writes the address it is given to `opened`, so that a
 * test sees whether the CLI opened the link, and which.
 */
const fakeBrowser = Effect.gen(function*() {
  const bin = yield* scopedTempDir("postline-browser-")
  const opened = Path.join(bin, "opened")
  writeFileSync(Path.join(bin, "xdg-open"), `#!/bin/sh\nprintf '%s\\n' "$1" >> '${opened}'\n`)
  chmodSync(Path.join(bin, "xdg-open"), 0o755)
  return {
    env: { PATH: `${bin}:${process.env.PATH ?? ""}`, DISPLAY: ":0" },
    opened: () => (existsSync(opened) ? readFileSync(opened, "utf8").split("\n").filter((line) => line !== "") : [])
  }
})


/** The browser following the network's redirect back to the server's callback: the page's status. */
const followBack = (location: string) =>
  Effect.promise(async () => {
    const response = await fetch(location, { redirect: "manual" })
    await response.text()
    return response.status
  })

/** A user with a team on `server`, and the CLI's environment as them, its browser the fake one. */
const cliUser = (env: Record<string, string>, server: ServerProcess, home: string, browser: { readonly env: Record<string, string> }) =>
  Effect.map(userWithTeam(env, server, 0), (user) => ({ ...user, cli: cliEnv(home, server.base, { POSTLINE_TOKEN: user.token, ...browser.env }) }))

describe.skipIf(tmuxMissing && !process.env.CI)("postline accounts connect <provider>: signing in at the network", () => {
  it.scopedLive("x on a terminal, against a server set up for X and X's FAKE: a denied approval fails (exit 1), an approved one prints the account (exit 0)", () =>
    Effect.gen(function*() {
      if (tmuxMissing) throw new Error("tmux is not installed: CI must run the CLI's interactive tests")
      const x = yield* makeXFake()
      const { env, home, server } = yield* publishing({
        X_CLIENT_ID: x.clientId,
        X_CLIENT_SECRET: x.clientSecret,
        X_API_URL: x.url,
        X_AUTHORIZE_URL: x.authorizeUrl
      })
      x.registerRedirectUri(`${server.base}/v1/oauth/callback/x`)
      const browser = yield* fakeBrowser
      const { call, cli, teamId } = yield* cliUser(env, server, home, browser)

      const denied = yield* cliInTmux(["accounts", "connect", "x"], cli)
      const deniedLink = linkIn(yield* denied.waitFor("the link", (text) => text.includes("Waiting for your approval at X…")))
      expect(deniedLink.startsWith(`${x.authorizeUrl}?`)).toBe(true)
      expect(yield* followBack(yield* Effect.map(consentAtX(deniedLink, "deny"), String))).toBe(400)
      const failed = yield* denied.waitFor("its end", (text) => text.includes("EXIT:"))
      expect(failed).toMatch(/Error \(AccountConnectFailed\): Connecting the X account failed \(connect [0-9a-f-]{36}\): .*access_denied/)
      expect(failed).toContain("EXIT:1")
      expect((yield* call("GET", `/v1/teams/${teamId}/social-accounts`)).body.data).toEqual([])

      const approved = yield* cliInTmux(["accounts", "connect", "x"], cli)
      const pane = yield* approved.waitFor("the link", (text) => text.includes("Waiting for your approval at X…"))
      expect(pane).toContain(`To connect the X account to team ${teamId}, open this link (opened in your browser), sign in at X and approve Postline:\n`)
      const link = linkIn(pane)
      expect(link.length).toBeGreaterThan(paneWidth)
      expect(yield* waitUntil("the browser opened", browser.opened, (opened) => opened.length === 2)).toEqual([deniedLink, link])
      expect(yield* followBack(yield* Effect.map(consentAtX(link, "allow"), String))).toBe(200)
      const done = yield* approved.waitFor("its end", (text) => text.includes("EXIT:"))
      const [account] = (yield* call("GET", `/v1/teams/${teamId}/social-accounts`)).body.data
      expect(account).toMatchObject({ provider: "x", handle: `@${x.user.username}`, status: "connected" })
      expect(done).toMatch(new RegExp(`\\nId: +${account.id}\\nProvider: +x\\nHandle: +@${x.user.username}\\n`))
      expect(done).toContain("EXIT:0")
    }))

  layer(FileServer.Live, { excludeTestServices: true })("against a server of the file", (it) => {
    it.scoped("mastodon on a terminal: prints the link and opens it, waits, then prints the account approved at the instance (its FAKE)", () =>
      Effect.gen(function*() {
        if (tmuxMissing) throw new Error("tmux is not installed: CI must run the CLI's interactive tests")
        const { env, home, server } = yield* publishingOnFileServer
        const browser = yield* fakeBrowser
        const { call, cli, teamId } = yield* cliUser(env, server, home, browser)
        const mastodon = yield* makeMastodonFake()

        const connect = yield* cliInTmux(["accounts", "connect", "mastodon", "--instance", mastodon.url], cli)
        const pane = yield* connect.waitFor("the link and the spinner", (text) => text.includes("Waiting for your approval at Mastodon…"))
        expect(pane).toContain(
          `To connect the Mastodon account to team ${teamId}, open this link (opened in your browser), sign in at Mastodon and approve Postline:\n`
        )
        expect(pane).toContain("Any browser will do, on any device. The link expires in 10 minutes.")
        const link = linkIn(pane)
        const authorization = new URL(link)
        expect(authorization.origin + authorization.pathname).toBe(`${mastodon.url}/oauth/authorize`)
        expect(yield* waitUntil("the browser opened", browser.opened, (opened) => opened.length > 0)).toEqual([link])

        expect(yield* followBack(yield* consentAtMastodon(link, "approve"))).toBe(200)
        const done = yield* connect.waitFor("its end", (text) => text.includes("EXIT:"))
        const [account] = (yield* call("GET", `/v1/teams/${teamId}/social-accounts`)).body.data
        expect(account).toMatchObject({ provider: "mastodon", handle: "@alice@mastodon.test", status: "connected" })
        expect(done).toMatch(new RegExp(`\\nId: +${account.id}\\nProvider: +mastodon\\nHandle: +@alice@mastodon\\.test\\n`))
        expect(done).toContain("EXIT:0")
      }))

    it.scoped("a denied approval on a terminal with --no-browser: nothing opened, the CLI says it failed and why, exit 1", () =>
      Effect.gen(function*() {
        const { env, home, server } = yield* publishingOnFileServer
        const browser = yield* fakeBrowser
        const { call, cli, teamId } = yield* cliUser(env, server, home, browser)
        const mastodon = yield* makeMastodonFake()

        const connect = yield* cliInTmux(["accounts", "connect", "mastodon", "--instance", mastodon.url, "--no-browser"], cli)
        const pane = yield* connect.waitFor("the link", (text) => text.includes("The link expires in"))
        expect(pane).toContain("open this link, sign in at Mastodon and approve Postline:\n")
        expect(yield* followBack(yield* consentAtMastodon(linkIn(pane), "deny"))).toBe(400)
        const done = yield* connect.waitFor("its end", (text) => text.includes("EXIT:"))
        expect(done).toMatch(/Error \(AccountConnectFailed\): Connecting the Mastodon account failed \(connect [0-9a-f-]{36}\): .*access_denied/)
        expect(done).toContain("EXIT:1")
        expect(browser.opened()).toEqual([])
        expect((yield* call("GET", `/v1/teams/${teamId}/social-accounts`)).body.data).toEqual([])
      }))

    it.scoped("off a terminal with --json: the link on standard error, no browser, and the connect's answer as the one JSON document", () =>
      Effect.gen(function*() {
        const { env, home, server } = yield* publishingOnFileServer
        const browser = yield* fakeBrowser
        const { call, cli, teamId } = yield* cliUser(env, server, home, browser)
        const mastodon = yield* makeMastodonFake()

        const connect = yield* startCli(["accounts", "connect", "mastodon", "--instance", mastodon.url, "--json"], cli)
        const instructions = yield* waitUntil("the link", connect.stderr, (text) => text.includes("The link expires in"))
        const link = instructions.split("\n").find((line) => line.startsWith(`${mastodon.url}/oauth/authorize?`))!
        expect(connect.stdout()).toBe("")
        yield* followBack(yield* consentAtMastodon(link, "approve"))
        expect(yield* Effect.promise(() => connect.exited)).toBe(0)
        const answer = jsonOf({ code: 0, stdout: connect.stdout(), stderr: connect.stderr() })
        expect(answer).toMatchObject({ teamId, provider: "mastodon", status: "connected", error: null })
        expect(answer).toEqual((yield* call("GET", `/v1/teams/${teamId}/social-accounts/connect/${answer.connectId}`)).body)
        // No spinner off a terminal, and no browser.
        expect(connect.stderr()).not.toContain("Waiting for your approval")
        expect(browser.opened()).toEqual([])
      }))

    it.scoped("refuses a provider without its option, another's option, both ways at once or none (exit 2); X not set up here: 409 naming its settings (exit 5)", () =>
      Effect.gen(function*() {
        const { env, home, server } = yield* publishingOnFileServer
        const { cli } = yield* cliUser(env, server, home, { env: {} })
        const refusals: Array<[ReadonlyArray<string>, string]> = [
          [["mastodon"], "Which instance is the account on? postline accounts connect mastodon --instance <url>"],
          [["bluesky"], "Which account? postline accounts connect bluesky --handle <handle>"],
          [["x", "--handle", "alice.bsky.social"], "--handle goes with bluesky"],
          [["bluesky", "--handle", "alice.bsky.social", "--instance", "https://mastodon.invalid"], "--instance goes with mastodon"],
          [["x", "--webhook", "https://example.com/hook"], "Either sign in (postline accounts connect x) or give --webhook"],
          [["--webhook", "https://example.com/hook", "--no-browser"], "--instance, --handle and --no-browser go with signing in"],
          [[], "Name a network to sign in at"]
        ]
        for (const [args, message] of refusals) {
          const refused = yield* runCli(["accounts", "connect", ...args, "--json"], cli)
          expect(refused.code, args.join(" ")).toBe(2)
          expect(jsonOf(refused).error, args.join(" ")).toMatchObject({ _tag: "UsageError", message: expect.stringContaining(message) })
        }
        const unknown = yield* runCli(["accounts", "connect", "myspace"], cli)
        expect(unknown.code).toBe(2)
        expect(unknown.stderr).toContain("<provider> must be one of bluesky, mastodon, x")

        const x = yield* runCli(["accounts", "connect", "x", "--json"], cli)
        expect(x.code).toBe(5)
        expect(jsonOf(x).error).toMatchObject({ _tag: "Conflict", reason: "provider_not_configured", message: expect.stringContaining("X_CLIENT_ID and X_CLIENT_SECRET") })

        const providers = yield* runCli(["providers"], cli)
        expect(providers.code, providers.stderr).toBe(0)
        const heading = "\nConnecting by signing in (postline accounts connect <provider>):\n"
        expect(providers.stdout).toContain(heading)
        // Each network connected by signing in, and no webhook, which is not.
        const signingIn = providers.stdout.slice(providers.stdout.indexOf(heading) + heading.length).split("\n\n")[0]!.split("\n")
        expect(signingIn.map((line) => line.split(":")[0]!.trim())).toEqual(["bluesky", "mastodon", "x"])
        expect(signingIn).toContain("  mastodon: yes")
        expect(signingIn).toContain("  x: not set up on this server: it needs X_CLIENT_ID and X_CLIENT_SECRET")
      }))
  })
})
