import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import * as Path from "node:path"
import sharp from "sharp"
import { accountWithNothingBought } from "../support/Billing.js"
import { answerOf, cliEnv, FileServer, jsonOf, publishingOnFileServer, runCli, userWithTeam } from "../support/CliProcess.js"
import { makeMastodonFake } from "../support/MastodonFake.js"
import { createUserWithToken } from "../support/ServerProcess.js"

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

layer(FileServer.Live, { excludeTestServices: true })("postline, publishing to a webhook receiver", (it) => {
  it.scoped("connects a webhook, uploads an image, drafts a post with it, estimates, publishes (--yes --json) and shows the results", () =>
    Effect.gen(function*() {
      const { env, home, receiver, server } = yield* publishingOnFileServer
      const { teamId, token } = yield* userWithTeam(env, server, 5)
      receiver.answerWith((_event, response) =>
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ id: "rcv-1", url: "https://receiver.test/p/1" })))
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })

      // No --team: the user's only team, from the agent context.
      const account = yield* answerOf(["accounts", "connect", "--webhook", `${receiver.url}/cli`, "--yes"], cli)
      expect(account).toMatchObject({ teamId, provider: "webhook", handle: new URL(receiver.url).host, status: "connected", lastError: null })
      expect(account.id).toMatch(uuidShape)
      expect(account.signingSecret).toMatch(/^whsec_/)

      const image = Path.join(home, "red.png")
      writeFileSync(image, yield* Effect.promise(() =>
        sharp({ create: { width: 40, height: 30, channels: 3, background: "#cc3333" } }).png().toBuffer()))
      const asset = yield* answerOf(["media", "upload", image, "--alt", "A red square", "--yes"], cli)
      expect(asset).toMatchObject({ teamId, name: "red.png", kind: "image", contentType: "image/png", width: 40, height: 30, altText: "A red square" })
      expect((yield* answerOf(["media", "list"], cli)).data.map((item: { id: string }) => item.id)).toEqual([asset.id])

      const post = yield* answerOf(["posts", "create", "--text", "Hello from the CLI", "--media", asset.id, "--yes"], cli)
      expect(post).toMatchObject({
        teamId,
        content: "Hello from the CLI",
        status: "draft",
        socialAccountIds: [],
        targets: [],
        media: [{ assetId: asset.id, altText: null }]
      })

      expect(yield* answerOf(["estimate", post.id], cli)).toEqual({
        total: 1,
        perAccount: [{ socialAccountId: account.id, credits: 1 }],
        available: 5,
        sufficient: true
      })
      const estimateText = yield* runCli(["estimate", post.id], cli)
      expect(estimateText.stdout).toContain(`${account.id}  webhook   ${new URL(receiver.url).host}  -     1\n`)
      expect(estimateText.stdout).toContain("\nCost:       1 credit\nAvailable:  5 credits\n")

      // No --account: every connected account of the team.
      const published = yield* answerOf(["post-now", post.id, "--yes"], cli)
      expect(published).toEqual({
        postId: post.id,
        outcome: "none_failed",
        results: [{
          socialAccountId: account.id,
          status: "published",
          externalId: "rcv-1",
          url: "https://receiver.test/p/1",
          error: null,
          creditsSpent: 1
        }]
      })
      expect(receiver.received).toHaveLength(1)
      const event = receiver.received[0]!
      expect(() => receiver.verify(event, account.signingSecret)).not.toThrow()
      expect(JSON.parse(event.body).data).toMatchObject({
        postId: post.id,
        socialAccountId: account.id,
        text: "Hello from the CLI",
        media: [{ assetId: asset.id, altText: "A red square", width: 40, height: 30 }]
      })

      const shown = yield* answerOf(["posts", "show", post.id], cli)
      expect(shown).toMatchObject({ id: post.id, status: "published", targets: [{ socialAccountId: account.id, status: "published", creditsSpent: 1, url: "https://receiver.test/p/1" }] })
      const shownText = yield* runCli(["posts", "show", post.id], cli)
      expect(shownText.stdout).toMatch(new RegExp(`Results per account:\\nACCOUNT +STATUS +CREDITS +URL +ERROR\\n${account.id}  published  1 +https://receiver\\.test/p/1  -\\n`))
      expect(yield* answerOf(["credits"], cli)).toEqual({ balance: 4, reserved: 0, available: 4 })
      expect((yield* answerOf(["posts", "list", "--status", "published"], cli)).data.map((item: { id: string }) => item.id)).toEqual([post.id])

      // The same post to the same account again: refused (409), nothing sent.
      const again = yield* runCli(["post-now", post.id, "--account", account.id, "--yes", "--json"], cli)
      expect(again.code).toBe(5)
      expect(jsonOf(again)).toEqual({ error: { _tag: "Conflict", message: expect.stringContaining("already published") } })
      expect(receiver.received).toHaveLength(1)
    }))

  it.scoped("analytics of a post published to Mastodon (its FAKE: no real instance here): shown, refreshed with --yes for a credit, 402 exit 6; billing and its spend cap as the owner and as a member", () =>
    Effect.gen(function*() {
      const { env, home, server } = yield* publishingOnFileServer
      const mastodon = yield* makeMastodonFake()
      const { call, organizationId, teamId, token } = yield* userWithTeam(env, server, 3)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })
      const toot = (yield* call("POST", `/v1/teams/${teamId}/social-accounts`, {
        provider: "mastodon",
        instanceUrl: mastodon.url,
        accessToken: mastodon.token
      })).body
      const post = yield* answerOf(["posts", "create", "--text", "Counting the gulls", "--account", toot.id, "--yes"], cli)
      const published = yield* answerOf(["post-now", post.id, "--yes"], cli)
      const statusId = published.results[0].externalId
      const target = { socialAccountId: toot.id, provider: "mastodon", externalId: statusId }
      expect(yield* answerOf(["analytics", "post", post.id], cli)).toEqual({ postId: post.id, targets: [{ ...target, latest: null, series: [] }] })
      mastodon.setCounts(statusId, { favourites_count: 7, reblogs_count: 2, replies_count: 1, quotes_count: 0 })
      const statusReads = () => mastodon.requests.filter(({ path }) => path.startsWith("/api/v1/statuses?"))

      // A paid read asks first: without a terminal or --yes, nothing is read; it reads one thing at a time.
      const unconfirmed = yield* runCli(["analytics", "refresh", "--post", post.id], cli)
      expect(unconfirmed).toMatchObject({ code: 2, stdout: "" })
      expect(unconfirmed.stderr).toBe(
        "Error (UsageError): Not refreshing analytics without confirmation: standard input is not a terminal, so pass --yes to proceed without asking\n"
      )
      const both = yield* runCli(["analytics", "refresh", "--post", post.id, "--account", toot.id, "--yes", "--json"], cli)
      expect(both.code).toBe(2)
      expect(jsonOf(both)).toEqual({ error: { _tag: "UsageError", message: "Pass either --post <id> or --account <id>" } })
      expect(statusReads()).toEqual([])

      const engagement = { takenAt: expect.any(String), likes: 7, reposts: 2, replies: 1, quotes: 0, views: null, linkClicks: 0 }
      const refreshed = yield* answerOf(["analytics", "refresh", "--post", post.id, "--idempotency-key", "gulls-1", "--yes"], cli)
      expect(refreshed).toEqual({ postId: post.id, targets: [{ ...target, latest: engagement, series: [engagement] }] })
      // The same key again: the first answer, neither read nor paid again.
      expect(yield* answerOf(["analytics", "refresh", "--post", post.id, "--idempotency-key", "gulls-1", "--yes"], cli)).toEqual(refreshed)
      expect(statusReads()).toHaveLength(1)
      const takenAt = refreshed.targets[0].latest.takenAt
      const shown = yield* runCli(["analytics", "post", post.id, "--limit", "1"], cli)
      expect(shown.stdout).toBe([
        `Post ${post.id}, the latest on each account (- not read yet, or not said by the provider):`,
        `ACCOUNT${" ".repeat(31)}PROVIDER  TAKEN AT${" ".repeat(takenAt.length - 6)}LIKES  REPOSTS  REPLIES  QUOTES  VIEWS  LINK CLICKS`,
        `${toot.id}  mastodon  ${takenAt}  7      2        1        0       -      0`,
        "",
        "Series (oldest first):",
        `ACCOUNT${" ".repeat(31)}TAKEN AT${" ".repeat(takenAt.length - 6)}LIKES  REPOSTS  REPLIES  QUOTES  VIEWS  LINK CLICKS`,
        `${toot.id}  ${takenAt}  7      2        1        0       -      0`,
        ""
      ].join("\n"))
      const badLimit = yield* runCli(["analytics", "post", post.id, "--limit", "1001", "--json"], cli)
      expect(badLimit.code).toBe(2)
      expect(jsonOf(badLimit)).toEqual({ error: { _tag: "ValidationError", message: "--limit must be a whole number from 1 to 1000" } })

      mastodon.setAccountCounts({ followers_count: 12, following_count: 3 })
      const counts = { takenAt: expect.any(String), followers: 12, following: 3, posts: 1 }
      expect(yield* answerOf(["analytics", "refresh", "--account", toot.id, "--yes"], cli))
        .toEqual({ socialAccountId: toot.id, provider: "mastodon", latest: counts, series: [counts] })
      const account = yield* runCli(["analytics", "account", toot.id], cli)
      expect(account.stdout).toMatch(new RegExp(
        `^Account:   ${toot.id}\nProvider:  mastodon\nLatest:    (\\S+)\n\nSeries \\(oldest first\\):\n` +
          `TAKEN AT +FOLLOWERS  FOLLOWING  POSTS\n\\1  12         3          1\n$`
      ))
      const ledger = (yield* call("GET", `/v1/organizations/${organizationId}/credits/transactions?limit=100`)).body.data
      expect(
        ledger.filter((entry: { kind: string }) => entry.kind === "analytics")
          .map(({ amount, postId, socialAccountId }: any) => ({ amount, postId, socialAccountId }))
      ).toEqual([{ amount: 1, postId: null, socialAccountId: toot.id }, { amount: 1, postId: post.id, socialAccountId: toot.id }])
      expect(yield* answerOf(["credits"], cli)).toEqual({ balance: 0, reserved: 0, available: 0 })

      // No credits left: 402, exit 6, nothing read.
      const reads = mastodon.requests.length
      const broke = yield* runCli(["analytics", "refresh", "--post", post.id, "--yes", "--json"], cli)
      expect(broke.code).toBe(6)
      expect(jsonOf(broke)).toEqual({
        error: {
          _tag: "PaymentRequired",
          message: "Reading analytics needs 1 credit and the organization has 0 available. " +
            `Billing is off on this server, so an operator adds credits with \`pnpm admin credits grant --organization ${organizationId} --amount 1\``
        }
      })
      expect(mastodon.requests).toHaveLength(reads)

      // The owner sees the whole billing state; without a payment provider nothing is on sale.
      expect(yield* answerOf(["billing"], cli)).toEqual({
        enabled: false,
        creditPacks: [],
        plan: null,
        credits: { balance: 0, reserved: 0, available: 0 },
        account: accountWithNothingBought(3)
      })
      const capped = yield* runCli(["billing", "spend-cap", "500", "--yes"], cli)
      expect(capped.code, capped.stderr).toBe(0)
      expect(capped.stdout).toBe([
        "Credits:            0 available (balance 0, reserved 0)",
        "Billing:            off: an operator grants credits",
        "Plan:               -",
        "Subscription:       inactive",
        "Period ends:        -",
        "Subscription ends:  -",
        "Auto-recharge:      off",
        "Spend cap:          500 credits a month (UTC)",
        "Spent this month:   3",
        ""
      ].join("\n"))
      expect((yield* answerOf(["billing"], cli)).account.spendCap).toEqual({ monthlyCredits: 500, spentThisMonth: 3 })

      // A member who is not an admin or owner: the credits only.
      const member = yield* createUserWithToken(env)
      const memberCli = cliEnv(home, server.base, { POSTLINE_TOKEN: member.token })
      const { email } = (yield* answerOf(["whoami"], memberCli)).user
      expect((yield* call("POST", `/v1/organizations/${organizationId}/members`, { email, role: "member" })).status).toBe(201)
      expect(yield* answerOf(["billing", "--org", organizationId], memberCli))
        .toEqual({ enabled: false, creditPacks: [], plan: null, credits: { balance: 0, reserved: 0, available: 0 }, account: null })
      expect((yield* runCli(["billing", "--org", organizationId], memberCli)).stdout).toBe([
        "Credits:  0 available (balance 0, reserved 0)",
        "Billing:  off: an operator grants credits",
        "Account:  (the subscription, auto-recharge and spend cap are shown to admins and owners)",
        ""
      ].join("\n"))
      const notTheirs = yield* runCli(["billing", "spend-cap", "none", "--org", organizationId, "--yes", "--json"], memberCli)
      expect(notTheirs.code).toBe(3)
      expect(jsonOf(notTheirs).error._tag).toBe("Forbidden")
      expect((yield* answerOf(["billing", "spend-cap", "none", "--yes"], cli)).account.spendCap).toEqual({ monthlyCredits: null, spentThisMonth: 3 })

      // Another organization's post: not found, through the stranger's own team or through ours.
      const stranger = yield* userWithTeam(env, server, 0)
      const strangerCli = cliEnv(home, server.base, { POSTLINE_TOKEN: stranger.token })
      for (const [args, message] of [
        [["analytics", "post", post.id], `Post ${post.id} not found`],
        [["analytics", "refresh", "--post", post.id, "--yes"], `Post ${post.id} not found`],
        [["billing", "--org", organizationId], `Organization ${organizationId} not found`]
      ] as const) {
        const refused = yield* runCli([...args, "--json"], strangerCli)
        expect(refused.code, args.join(" ")).toBe(4)
        expect(jsonOf(refused)).toEqual({ error: { _tag: "NotFound", message } })
      }
    }))
})
