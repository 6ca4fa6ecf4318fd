import { expect, layer } from "@effect/vitest"
import { maxPostLength } from "@postline/domain"
import { Effect } from "effect"
import { truncateSync, writeFileSync } from "node:fs"
import * as Path from "node:path"
import { answerOf, cliEnv, FileServer, jsonOf, publishing, publishingOnFileServer, runCli, startCli, userWithTeam, waitUntil } from "../support/CliProcess.js"
import { makeDiscordFake } from "../support/DiscordFake.js"
import { makeMastodonFake } from "../support/MastodonFake.js"
import { makeTelegramFake } from "../support/TelegramFake.js"

/** The longest file `posts create --file` reads: each character of the longest post 4 bytes of UTF-8, and a CRLF. */
const maxFileBytes = maxPostLength * 4 + 2

layer(FileServer.Live, { excludeTestServices: true })("postline reads no more input than it takes", (it) => {
  it.scoped("posts create --file refuses a file one byte past the longest post unread, and a 200 MB one at once (exit 2)", () =>
    Effect.gen(function*() {
      const { env, home, server } = yield* publishingOnFileServer
      const { teamId, token } = yield* userWithTeam(env, server, 0)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })

      // Sparse files: their length costs no disk, and a CLI that read them whole would hold it all in memory.
      const pastBound = Path.join(home, "past-bound.txt")
      writeFileSync(pastBound, "")
      truncateSync(pastBound, maxFileBytes + 1)
      const refused = yield* runCli(["posts", "create", "--file", pastBound, "--yes", "--json"], cli)
      expect(refused.code, refused.stderr).toBe(2)
      expect(jsonOf(refused)).toEqual({
        error: {
          _tag: "ValidationError",
          message: `--file: ${pastBound} is longer than ${maxFileBytes} bytes (a post's text is at most ${maxPostLength} characters)`
        }
      })

      const huge = Path.join(home, "huge.txt")
      writeFileSync(huge, "")
      truncateSync(huge, 200 * 1024 * 1024)
      const hugeRefused = yield* runCli(["posts", "create", "--file", huge, "--yes"], cli)
      expect(hugeRefused.code, hugeRefused.stderr).toBe(2)
      expect(hugeRefused.stderr).toContain(`--file: ${huge} is longer than ${maxFileBytes} bytes`)

      // At the bound the file is read, and its text judged by the post's schema instead.
      const atBound = Path.join(home, "at-bound.txt")
      writeFileSync(atBound, "x".repeat(maxFileBytes))
      const tooManyCharacters = yield* runCli(["posts", "create", "--file", atBound, "--yes", "--json"], cli)
      expect(tooManyCharacters.code).toBe(2)
      expect(jsonOf(tooManyCharacters).error.message).toBe(`The post's text must be 1 to ${maxPostLength} characters, not blank`)

      // The longest post, in 4-byte characters and with its CRLF, is exactly the bound: it is taken.
      const longest = Path.join(home, "longest.txt")
      writeFileSync(longest, `${"😀".repeat(maxPostLength)}\r\n`)
      const created = yield* answerOf(["posts", "create", "--file", longest, "--yes"], cli)
      expect(created).toMatchObject({ teamId, status: "draft", content: "😀".repeat(maxPostLength) })
    }))

  it.scoped("accounts connect takes the secret from the first line of standard input while its writer keeps it open, and refuses a line that never ends", () =>
    Effect.gen(function*() {
      const { env, home, server } = yield* publishingOnFileServer
      const mastodon = yield* makeMastodonFake()
      const { teamId, token } = yield* userWithTeam(env, server, 0)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })

      const connect = yield* startCli(["accounts", "connect", "--mastodon", mastodon.url, "--yes", "--json"], cli)
      // The token, then more that is not read, and the pipe stays open: no end of input to wait for.
      connect.child.stdin.write(`${mastodon.token}\nnot the token\n`)
      const code = yield* waitUntil("the connection", () => connect.child.exitCode, (exitCode) => exitCode !== null)
      expect(code, connect.stderr()).toBe(0)
      expect(JSON.parse(connect.stdout())).toMatchObject({ teamId, provider: "mastodon", status: "connected" })
      const verified = mastodon.requests.find((request) => request.path === "/api/v1/accounts/verify_credentials")
      expect(verified?.headers.authorization).toBe(`Bearer ${mastodon.token}`)

      // A first line past 4096 bytes without its break is refused as it arrives, the pipe still open.
      const endless = yield* startCli(["accounts", "connect", "--mastodon", mastodon.url, "--yes", "--json"], cli)
      endless.child.stdin.write("x".repeat(5000))
      const refused = yield* waitUntil("the refusal", () => endless.child.exitCode, (exitCode) => exitCode !== null)
      expect(refused, endless.stderr()).toBe(2)
      expect(JSON.parse(endless.stdout())).toEqual({
        error: { _tag: "UsageError", message: "Access token: the first line of standard input is longer than 4096 bytes" }
      })
    }))

  it.scoped("accounts connect --telegram <chat> and --discord read the bot's token and the webhook's URL from standard input, never the command line", () =>
    Effect.gen(function*() {
      const telegram = yield* makeTelegramFake
      const discord = yield* makeDiscordFake
      const { env, home, server } = yield* publishing({ TELEGRAM_API_URL: telegram.url, DISCORD_API_URL: discord.apiUrl })
      const { teamId, token } = yield* userWithTeam(env, server, 0)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })
      const connectWith = (args: ReadonlyArray<string>, secret: string) =>
        Effect.gen(function*() {
          const connect = yield* startCli(["accounts", "connect", ...args, "--yes", "--json"], cli)
          connect.child.stdin.end(`${secret}\n`)
          const code = yield* waitUntil("the connection", () => connect.child.exitCode, (exitCode) => exitCode !== null)
          return { code, stdout: connect.stdout(), stderr: connect.stderr() }
        })

      const bot = yield* connectWith(["--telegram", "@postline_news", "--name", "News"], telegram.bot.token)
      expect(bot.code, bot.stderr).toBe(0)
      expect(JSON.parse(bot.stdout)).toMatchObject({ teamId, provider: "telegram", handle: "@postline_news", displayName: "News", status: "connected" })
      const channel = yield* connectWith(["--discord"], discord.webhookUrl())
      expect(channel.code, channel.stderr).toBe(0)
      expect(JSON.parse(channel.stdout)).toMatchObject({ teamId, provider: "discord", status: "connected" })
      expect(`${bot.stdout}${channel.stdout}`).not.toContain(discord.webhook.token)

      // What the schema refuses is refused before anything is sent (exit 2), and two accounts at once are a usage error.
      const requestsBefore = telegram.requests.length
      const badChat = yield* connectWith(["--telegram", "not a chat"], telegram.bot.token)
      expect(badChat.code, badChat.stderr).toBe(2)
      expect(JSON.parse(badChat.stdout).error.message).toContain("must be a channel's @username or a numeric chat id")
      expect(telegram.requests).toHaveLength(requestsBefore)
      const notDiscord = yield* connectWith(["--discord"], "https://example.com/api/webhooks/1/token")
      expect(notDiscord.code, notDiscord.stderr).toBe(2)
      const both = yield* runCli(["accounts", "connect", "--discord", "--telegram", "@postline_news", "--yes", "--json"], cli)
      expect(both.code, both.stderr).toBe(2)
      expect(jsonOf(both)).toEqual({ error: { _tag: "UsageError", message: "Give one account to connect: --discord or --telegram" } })
    }))
})
