import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { writeFileSync } from "node:fs"
import * as Path from "node:path"
import sharp from "sharp"
import { answerOf, cliEnv, jsonOf, publishing, runCli, userWithTeam } from "../support/CliProcess.js"

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describe("postline, publishing to a webhook receiver", () => {
  it.scopedLive("connects a webhook, uploads an image, drafts a post with it, estimates, publishes (--yes --json) and shows the results", () =>
    Effect.gen(function*() {
      const { env, home, receiver, server } = yield* publishing()
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
      expect(estimateText.stdout).toContain(`${account.id}  webhook   ${new URL(receiver.url).host}  1\n`)
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
    }), 300_000)
})
