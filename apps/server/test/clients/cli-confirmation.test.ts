import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { answerOf, cliEnv, cliInTmux, publishing, tmuxAvailable, userWithTeam } from "../support/CliProcess.js"
import { makeMastodonFake } from "../support/MastodonFake.js"

const tmuxMissing = !tmuxAvailable
if (tmuxMissing && !process.env.CI) {
  console.warn("\ntmux is not installed: SKIPPING the CLI's interactive confirmation tests (CI runs them).\n")
}

describe.skipIf(tmuxMissing && !process.env.CI)("postline's confirmation on a terminal (tmux)", () => {
  it.scopedLive("shows the cost and the credits, publishes on y and sends nothing on n; a free change says Cost: none; an analytics refresh shows its cost, or ends at the spend cap", () =>
    Effect.gen(function*() {
      if (tmuxMissing) throw new Error("tmux is not installed: CI must run the CLI's interactive tests")
      const { env, home, receiver, server } = yield* publishing()
      const { call, organizationId, token } = yield* userWithTeam(env, server, 5)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })
      const account = yield* answerOf(["accounts", "connect", "--webhook", receiver.url, "--yes"], cli)
      const first = yield* answerOf(["posts", "create", "--text", "Confirmed", "--yes"], cli)

      // A change that spends nothing asks too, and says so.
      const draft = yield* cliInTmux(["posts", "create", "--text", "Declined", "--account", account.id, "--json"], cli)
      const draftPreview = yield* draft.waitFor("the question", (pane) => pane.includes("Proceed? [y/N]"))
      expect(draftPreview).toContain(`Create a draft in team ${first.teamId}: Declined\nAccounts:  ${account.id}\nMedia:     -\nCost: none\nProceed? [y/N]`)
      yield* draft.sendKeys("y", "Enter")
      const drafted = yield* draft.waitFor("its end", (pane) => pane.includes("EXIT:"))
      expect(drafted).toContain("EXIT:0")
      const second = (yield* call("GET", `/v1/teams/${first.teamId}/posts?status=draft`)).body.data
        .find((post: { content: string }) => post.content === "Declined")
      expect(second).toMatchObject({ status: "draft", socialAccountIds: [account.id] })

      const yes = yield* cliInTmux(["post-now", first.id], cli)
      const preview = yield* yes.waitFor("the question", (pane) => pane.includes("Proceed? [y/N]"))
      expect(preview).toContain(`Publish post ${first.id} now to 1 account:`)
      expect(preview).toContain(`${account.id}  webhook   ${new URL(receiver.url).host}  -     1`)
      expect(preview).toMatch(/\nCost: {7}1 credit\nAvailable: {2}5 credits\nProceed\? \[y\/N\] *\n/)
      expect(receiver.received).toHaveLength(0)
      yield* yes.sendKeys("y", "Enter")
      const done = yield* yes.waitFor("its end", (pane) => pane.includes("EXIT:"))
      expect(done).toContain("EXIT:0")
      expect(done).toMatch(new RegExp(`${account.id}  published  1 `))
      expect(done).toContain("Outcome: none_failed")
      expect(receiver.received).toHaveLength(1)
      expect(JSON.parse(receiver.received[0]!.body).data.postId).toBe(first.id)

      const no = yield* cliInTmux(["post-now", second.id], cli)
      expect(yield* no.waitFor("the question", (pane) => pane.includes("Proceed? [y/N]"))).toContain("Available:  4 credits")
      yield* no.sendKeys("n", "Enter")
      const declined = yield* no.waitFor("its end", (pane) => pane.includes("EXIT:"))
      expect(declined).toContain("Error (Cancelled): Cancelled: nothing was done (not publishing)")
      expect(declined).toContain("EXIT:1")
      expect(receiver.received).toHaveLength(1)
      expect((yield* call("GET", `/v1/organizations/${organizationId}/credits`)).body).toEqual({ balance: 4, reserved: 0, available: 4 })
      expect((yield* call("GET", `/v1/teams/${second.teamId}/posts/${second.id}`)).body.status).toBe("draft")

      // Deleting from the networks asks too: what goes and from where, that it cannot be undone and gives no credit back.
      const unpublish = yield* cliInTmux(["posts", "unpublish", first.id], cli)
      const unpublishPreview = yield* unpublish.waitFor("the question", (pane) => pane.includes("Proceed? [y/N]"))
      expect(unpublishPreview).toContain(`Delete post ${first.id} from 1 account: "Confirmed"\nACCOUNT`)
      expect(unpublishPreview).toMatch(new RegExp(`\n${account.id}  webhook +\\S+ +-\n`))
      expect(unpublishPreview).toContain(
        "Every part is deleted from each network, which cannot be undone. Credits spent publishing it are not given back.\n" +
          "Cost: none\nProceed? [y/N]"
      )
      yield* unpublish.sendKeys("n", "Enter")
      const kept = yield* unpublish.waitFor("its end", (pane) => pane.includes("EXIT:"))
      expect(kept).toContain("Error (Cancelled): Cancelled: nothing was done (not deleting the post from the networks)")
      expect(kept).toContain("EXIT:1")
      expect(receiver.received).toHaveLength(1)
      expect((yield* call("GET", `/v1/teams/${first.teamId}/posts/${first.id}`)).body.status).toBe("published")

      // A paid analytics read (of a post on the Mastodon FAKE: no real instance here) shows its estimate and asks too.
      const mastodon = yield* makeMastodonFake()
      const toot = (yield* call("POST", `/v1/teams/${first.teamId}/social-accounts`, {
        provider: "mastodon",
        instanceUrl: mastodon.url,
        accessToken: mastodon.token
      })).body
      const tooted = (yield* call("POST", `/v1/teams/${first.teamId}/posts`, { content: "Counting the gulls" })).body
      const sent = yield* call("POST", `/v1/teams/${first.teamId}/posts/${tooted.id}/post-now`, { socialAccountIds: [toot.id] })
      expect(sent.body.outcome).toBe("none_failed")
      mastodon.setCounts(sent.body.results[0].externalId, { favourites_count: 7 })
      const refresh = yield* cliInTmux(["analytics", "refresh", "--post", tooted.id], cli)
      const refreshPreview = yield* refresh.waitFor("the question", (pane) => pane.includes("Proceed? [y/N]"))
      expect(refreshPreview).toContain(
        `Read the engagement of post ${tooted.id} on each account it was published to now:\n` +
          `ACCOUNT${" ".repeat(31)}PROVIDER  HANDLE${" ".repeat(toot.handle.length - 4)}NAME   CREDITS\n` +
          `${toot.id}  mastodon  ${toot.handle}  Alice  1\n\nCost:       1 credit\nAvailable:  3 credits\nProceed? [y/N]`
      )
      expect(mastodon.requests.filter(({ path }) => path.startsWith("/api/v1/statuses?"))).toEqual([])
      yield* refresh.sendKeys("y", "Enter")
      const refreshed = yield* refresh.waitFor("its end", (pane) => pane.includes("EXIT:"))
      expect(refreshed).toContain("EXIT:0")
      expect(refreshed).toMatch(new RegExp(`${toot.id}  mastodon  \\S+  7      0        0        0       -      0\n`))
      expect((yield* call("GET", `/v1/organizations/${organizationId}/credits`)).body).toEqual({ balance: 2, reserved: 0, available: 2 })

      // Credits enough, but the month's spend cap reached (two publishes and a read): refused before asking, as the server would.
      const capped = yield* call("PATCH", `/v1/organizations/${organizationId}/billing/spend-cap`, { monthlyCredits: 3 })
      expect(capped.body.account.spendCap).toEqual({ monthlyCredits: 3, spentThisMonth: 3 })
      const stopped = yield* cliInTmux(["analytics", "refresh", "--post", tooted.id], cli)
      const stoppedPane = yield* stopped.waitFor("its end", (pane) => pane.includes("EXIT:"))
      expect(stoppedPane).toContain(
        "Error (PaymentRequired: spend_cap_reached): The monthly spend cap stops it: refreshing costs 1 credit, more than the cap leaves this month (postline billing shows it)\nEXIT:8"
      )
      expect(stoppedPane).not.toContain("Proceed?")
      expect(mastodon.requests.filter(({ path }) => path.startsWith("/api/v1/statuses?"))).toHaveLength(1)
    }))

  it.scopedLive("names each of two webhooks on one host and quotes the post's text in a publish's confirmation", () =>
    Effect.gen(function*() {
      if (tmuxMissing) throw new Error("tmux is not installed: CI must run the CLI's interactive tests")
      const { env, home, receiver, server } = yield* publishing()
      const { token } = yield* userWithTeam(env, server, 5)
      const cli = cliEnv(home, server.base, { POSTLINE_TOKEN: token })
      const host = new URL(receiver.url).host
      const blog = yield* answerOf(["accounts", "connect", "--webhook", `${receiver.url}/blog`, "--name", "Blog", "--yes"], cli)
      const shop = yield* answerOf(["accounts", "connect", "--webhook", `${receiver.url}/shop`, "--name", "Shop", "--yes"], cli)
      expect([blog, shop].map(({ handle, displayName }) => [handle, displayName])).toEqual([[host, "Blog"], [host, "Shop"]])
      const post = yield* answerOf([
        "posts",
        "create",
        "--text",
        "Spring sale: every print half price until Sunday,\nthen back to the usual prices for the rest of the year",
        "--yes"
      ], cli)

      const publish = yield* cliInTmux(["post-now", post.id], cli)
      const preview = yield* publish.waitFor("the question", (pane) => pane.includes("Proceed? [y/N]"))
      // The text on one line, cut at 60 characters; the rows told apart by the accounts' names.
      expect(preview).toContain(
        `Publish post ${post.id} now to 2 accounts:\nText: "Spring sale: every print half price until Sunday, then back…"\nACCOUNT`
      )
      expect(preview).toContain(`${blog.id}  webhook   ${host}  Blog  1\n`)
      expect(preview).toContain(`${shop.id}  webhook   ${host}  Shop  1\n`)
      yield* publish.sendKeys("n", "Enter")
      expect(yield* publish.waitFor("its end", (pane) => pane.includes("EXIT:"))).toContain("EXIT:1")

      // An organization without credits is refused before asking, told how to get them (billing is off here).
      const broke = yield* userWithTeam(env, server, 0)
      const brokeCli = cliEnv(home, server.base, { POSTLINE_TOKEN: broke.token })
      yield* answerOf(["accounts", "connect", "--webhook", `${receiver.url}/broke`, "--yes"], brokeCli)
      const unpaid = yield* answerOf(["posts", "create", "--text", "Not paid for", "--yes"], brokeCli)
      const refused = yield* cliInTmux(["post-now", unpaid.id], brokeCli)
      const refusedPane = yield* refused.waitFor("its end", (pane) => pane.includes("EXIT:"))
      // The pane wraps the long line at its width, within a word or at a space: read it without its spacing.
      const unspaced = (text: string) => text.replace(/\s+/g, "")
      expect(unspaced(refusedPane)).toContain(unspaced(
        "Error (PaymentRequired: insufficient_credits): Not enough credits: publishing costs 1 credit, the organization has 0 credits " +
          "available. Billing is off on this server, so an operator adds credits with `pnpm admin credits grant " +
          `--organization ${broke.organizationId} --amount 1\`EXIT:6`
      ))
      expect(refusedPane).not.toContain("Proceed?")
      expect(receiver.received).toHaveLength(0)
    }))
})
