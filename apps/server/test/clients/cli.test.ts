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
        perAccount: [{ socialAccountId: account.id, credits: 1, publishes: 1, problems: [] }],
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
          creditsSpent: 1,
          parts: [{ position: 1, externalId: "rcv-1", url: "https://receiver.test/p/1" }],
          firstComment: null
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
      expect(jsonOf(again)).toEqual({
        error: { _tag: "Conflict", reason: "already_published", message: expect.stringContaining("already published") }
      })
      expect(receiver.received).toHaveLength(1)
    }))

  it.scoped("providers: each provider's rules, with --json the API's answer (this server's webhook costs 1), else tables", () =>
    Effect.gen(function*() {
      const { env, home, server } = yield* publishingOnFileServer
      const { call, token } = yield* userWithTeam(env, server, 0)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })
      const rules = yield* answerOf(["providers"], cli)
      expect(rules).toEqual((yield* call("GET", "/v1/providers")).body)
      expect(rules.data.map(({ provider, credits }: any) => [provider, credits.perPublish])).toEqual([["bluesky", 1], ["mastodon", 1], ["x", 1], ["telegram", 1], ["discord", 1], ["webhook", 1]])
      expect(rules.data[0]).toMatchObject({ text: { maxLength: 300, maxBytes: 3000 }, media: { maxItems: 4 } })
      expect(rules.data[1]).toMatchObject({ text: { maxLength: 500, urlLength: 23 }, media: { perAccount: true } })

      const shown = yield* runCli(["providers"], cli)
      expect(shown.code, shown.stderr).toBe(0)
      const lines = shown.stdout.split("\n")
      expect(lines[0]).toMatch(/^PROVIDER +CONNECT +TEXT +THREADS +FIRST COMMENT +DELETE +CREDITS$/)
      expect(lines[1]).toMatch(/^bluesky +app_password +300 graphemes, 3000 bytes +up to 25 parts +yes +yes +1$/)
      expect(lines[2]).toMatch(/^mastodon +access_token +500 graphemes, URL = 23 +up to 25 parts +yes +yes +1$/)
      expect(lines[3]).toMatch(/^x +oauth +280 weighted, URL = 23 +up to 25 parts +yes +yes +1$/)
      expect(lines[4]).toMatch(/^telegram +bot_token +4096 UTF-16 units +up to 25 parts +yes +yes +1$/)
      expect(lines[5]).toMatch(/^discord +channel_webhook +2000 code points +up to 25 parts +yes +yes +1$/)
      expect(lines[6]).toMatch(/^webhook +signed_webhook +no limit +up to 25 parts +yes +yes +1$/)
      expect(shown.stdout).toMatch(/\nbluesky +4 +jpeg png webp gif +2 MB, none +not taken +none\n/)
      expect(shown.stdout).toMatch(/\nmastodon \* +4 +jpeg png webp gif mp4 +16 MiB, 33.2 MP +99 MiB, 8.3 MP, none +1500\n/)
      expect(shown.stdout).toMatch(/\nx +4 +jpeg png webp gif mp4 +5 MiB, none +512 MiB, none, none +1000\n/)
      expect(shown.stdout).toMatch(/\ntelegram +10 +jpeg png webp mp4 +10 MiB, none +50 MiB, none, none +none\n/)
      expect(shown.stdout).toMatch(/\ndiscord +10 +jpeg png webp gif mp4 +10 MiB, none +10 MiB, none, none +1024\n/)
      expect(shown.stdout).toContain(
        "\n  mastodon: 300 per 5 min\n  x: 100 per 15 min\n  telegram: 1 per 1 s, 20 per 1 min\n  discord: 5 per 2 s, 30 per 1 min\n  webhook: no limit\n"
      )
    }))

  it.scoped("a thread with a first comment and a version for one account: drafted (--part, --first-comment, --account-version, --parts-file), shown, published to two webhooks and unpublished (asks first; --account, then the rest), credits kept", () =>
    Effect.gen(function*() {
      const { env, home, receiver, server } = yield* publishingOnFileServer
      const { token } = yield* userWithTeam(env, server, 10)
      let answered = 0
      receiver.answerWith((_event, response) => {
        answered += 1
        response.writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ id: `rcv-${answered}`, url: `https://receiver.test/p/${answered}` }))
      })
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })
      const harbour = yield* answerOf(["accounts", "connect", "--webhook", `${receiver.url}/harbour`, "--yes"], cli)
      const pier = yield* answerOf(["accounts", "connect", "--webhook", `${receiver.url}/pier`, "--yes"], cli)

      const draft = yield* answerOf([
        "posts", "create", "--text", "1/ Why the tide turns",
        "--part", "2/ The moon pulls the sea", "--part", "3/ The sun helps, less",
        "--first-comment", "Tide tables at the harbour office",
        "--account-version", `${pier.id}=Tides, in one line`,
        "--account", harbour.id, "--account", pier.id, "--yes"
      ], cli)
      expect(draft).toMatchObject({
        content: "1/ Why the tide turns",
        status: "draft",
        thread: [{ content: "2/ The moon pulls the sea", media: [] }, { content: "3/ The sun helps, less", media: [] }],
        firstComment: { content: "Tide tables at the harbour office", media: [] },
        versions: [{ socialAccountId: pier.id, content: "Tides, in one line", media: null, thread: null }]
      })
      // Two places for one field: refused before anything is sent.
      const partsFile = Path.join(home, "parts.json")
      writeFileSync(partsFile, JSON.stringify({ thread: [{ content: "2/ The moon pulls, the sea follows" }], versions: [{ socialAccountId: pier.id, thread: [] }] }))
      const twice = yield* runCli(["posts", "update", draft.id, "--parts-file", partsFile, "--part", "2/ Again", "--yes", "--json"], cli)
      expect(twice.code).toBe(2)
      expect(jsonOf(twice)).toEqual({ error: { _tag: "UsageError", message: "The thread comes from one place: --part or --parts-file's thread, not both" } })
      // A script's file: the thread and the versions replaced, the first comment kept.
      const post = yield* answerOf(["posts", "update", draft.id, "--parts-file", partsFile, "--yes"], cli)
      expect(post).toMatchObject({
        thread: [{ content: "2/ The moon pulls, the sea follows", media: [] }],
        firstComment: { content: "Tide tables at the harbour office" },
        versions: [{ socialAccountId: pier.id, content: null, media: null, thread: [] }]
      })
      const shown = yield* runCli(["posts", "show", post.id], cli)
      expect(shown.stdout).toContain("Thread:         2 parts\nFirst comment:  yes\n")
      expect(shown.stdout).toContain(
        "\n1/ Why the tide turns\n\nPart 2:\n2/ The moon pulls, the sea follows\n\nFirst comment:\nTide tables at the harbour office\n\n" +
          `Version for ${pier.id}:\n(the post's text)\n(no thread)\n\nResults per account:\n(none)\n`
      )

      const estimate = yield* answerOf(["estimate", post.id], cli)
      expect(estimate.perAccount).toEqual([
        { socialAccountId: harbour.id, credits: expect.any(Number), publishes: 3, problems: [] },
        { socialAccountId: pier.id, credits: expect.any(Number), publishes: 2, problems: [] }
      ])
      // What each account gets sent: the parts of its version and the first comment.
      expect((yield* runCli(["estimate", post.id], cli)).stdout).toMatch(new RegExp(
        `^ACCOUNT +PROVIDER +HANDLE +NAME +PUBLISHES +CREDITS\n${harbour.id} +webhook +\\S+ +- +3 +3\n${pier.id} +webhook +\\S+ +- +2 +2\n`
      ))
      const published = yield* answerOf(["post-now", post.id, "--yes"], cli)
      expect(published).toMatchObject({
        outcome: "none_failed",
        results: [{ socialAccountId: harbour.id, status: "published" }, { socialAccountId: pier.id, status: "published" }]
      })
      // A webhook gets the thread whole, in one event per account, with the first comment.
      const events = receiver.received.map((event) => JSON.parse(event.body))
      const sentTo = (accountId: string) => events.filter((event) => event.data.socialAccountId === accountId)
      expect(sentTo(harbour.id)).toMatchObject([{
        type: "post.published",
        data: { text: "1/ Why the tide turns", thread: [{ text: "2/ The moon pulls, the sea follows" }], firstComment: { text: "Tide tables at the harbour office" } }
      }])
      expect(sentTo(pier.id)).toMatchObject([{ type: "post.published", data: { text: "1/ Why the tide turns", thread: [] } }])
      const balance = (yield* answerOf(["credits"], cli)).balance
      expect(balance).toBe(10 - estimate.total)

      // Deleting from the networks asks first: without a terminal or --yes, nothing is deleted.
      const unconfirmed = yield* runCli(["posts", "unpublish", post.id], cli)
      expect(unconfirmed).toMatchObject({ code: 2, stdout: "" })
      expect(unconfirmed.stderr).toBe(
        "Error (UsageError): Not deleting the post from the networks without confirmation: standard input is not a terminal, so pass --yes to proceed without asking\n"
      )
      const fromHarbour = yield* answerOf(["posts", "unpublish", post.id, "--account", harbour.id, "--yes"], cli)
      expect(fromHarbour).toEqual({ postId: post.id, results: [{ socialAccountId: harbour.id, status: "deleted", error: null }], outcome: "none_failed" })
      // Targets come oldest first: the two published at once may come in either order.
      const targetsOf = (shown: { targets: ReadonlyArray<{ socialAccountId: string }> }) =>
        Object.fromEntries(shown.targets.map((target) => [target.socialAccountId, target]))
      expect(targetsOf(yield* answerOf(["posts", "show", post.id], cli))).toMatchObject({
        [harbour.id]: { status: "deleted", deletedAt: expect.any(String) },
        [pier.id]: { status: "published", deletedAt: null }
      })
      const again = yield* runCli(["posts", "unpublish", post.id, "--account", harbour.id, "--yes", "--json"], cli)
      expect(again.code).toBe(5)
      expect(jsonOf(again).error._tag).toBe("Conflict")

      // The rest, for people: every account it is still published to.
      const rest = yield* runCli(["posts", "unpublish", post.id, "--idempotency-key", "tides-down", "--yes"], cli)
      expect(rest.code, rest.stderr).toBe(0)
      expect(rest.stdout).toBe([
        `ACCOUNT${" ".repeat(31)}STATUS   ERROR`,
        `${pier.id}  deleted  -`,
        "",
        "Outcome: none_failed",
        "Credits spent publishing it are not given back.",
        ""
      ].join("\n"))
      // The same key again: the first answer, nothing deleted twice.
      expect(yield* answerOf(["posts", "unpublish", post.id, "--idempotency-key", "tides-down", "--yes"], cli))
        .toEqual({ postId: post.id, results: [{ socialAccountId: pier.id, status: "deleted", error: null }], outcome: "none_failed" })
      const deleted = receiver.received.map((event) => JSON.parse(event.body)).filter((event) => event.type === "post.deleted")
      expect(deleted.map((event) => event.data.socialAccountId)).toEqual([harbour.id, pier.id])
      const gone = yield* answerOf(["posts", "show", post.id], cli)
      expect(gone.status).toBe("deleted")
      expect(targetsOf(gone)).toMatchObject({ [harbour.id]: { status: "deleted" }, [pier.id]: { status: "deleted" } })
      const shownDeleted = yield* runCli(["posts", "show", post.id], cli)
      expect(shownDeleted.stdout).toMatch(/\nResults per account:\nACCOUNT +STATUS +CREDITS +PARTS +FIRST COMMENT +DELETED AT +URL +ERROR\n/)
      expect(shownDeleted.stdout).toMatch(/\nPublished parts:\nACCOUNT +PART +ID +URL\n/)
      // Nothing given back.
      expect(yield* answerOf(["credits"], cli)).toMatchObject({ balance })
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
          reason: "insufficient_credits",
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
