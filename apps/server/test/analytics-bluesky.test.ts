import { describe, expect, layer } from "@effect/vitest"
import type { PostId, SocialAccountId, TeamId } from "@postline/domain"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { BlueskyAppViewNetwork } from "./support/BlueskyNetwork.js"
import { publishingTeam } from "./support/Publishing.js"
import { TestServer } from "./support/TestServer.js"

layer(Layer.merge(TestServer, BlueskyAppViewNetwork.layer), { excludeTestServices: true })("Bluesky analytics", (it) => {
  describe("from a real AppView, read through the account's PDS", () => {
    it.scoped("other accounts' like, reposts, reply and quote appear in the post's snapshot, their follows in the account's", () =>
      Effect.gen(function*() {
        const network = yield* BlueskyAppViewNetwork
        const author = yield* Effect.promise(() => network.createAccount())
        const fan = yield* Effect.promise(() => network.createAccount())
        const other = yield* Effect.promise(() => network.createAccount())
        const team = yield* publishingTeam(5)
        const sky = yield* team.connect({ provider: "bluesky", handle: author.handle, appPassword: author.appPassword, serviceUrl: network.serviceUrl })
        const post = yield* team.draft("Hello from Postline")
        const sent = yield* team.postNow(post.id, [sky.id])
        expect(sent.body.outcome).toBe("none_failed")
        const uri: string = sent.body.results[0].externalId
        // Each count differs from the others, so that a count read into the wrong field fails.
        yield* Effect.promise(async () => {
          await network.like(fan, uri)
          await network.repost(fan, uri)
          await network.repost(other, uri)
          await network.reply(fan, uri, "Nice")
          await network.quote(other, uri, "Look")
          await network.follow(fan, author.did)
          await network.follow(other, author.did)
          await network.follow(author, fan.did)
          await network.post(author, "Second")
          await network.post(author, "Third")
          await network.processAll()
        })

        const analytics = team.admin.client.analytics
        const refreshed = yield* analytics.refreshPostAnalytics({
          path: { teamId: team.team.id as TeamId, postId: post.id as PostId },
          headers: {}
        })
        const snapshot = { takenAt: expect.any(String), likes: 1, reposts: 2, replies: 1, quotes: 1, views: null, linkClicks: 0 }
        expect(refreshed.targets).toEqual([
          { socialAccountId: sky.id, provider: "bluesky", externalId: uri, latest: snapshot, series: [snapshot] }
        ])
        const account = yield* analytics.refreshAccountAnalytics({
          path: { teamId: team.team.id as TeamId, socialAccountId: sky.id as SocialAccountId },
          headers: {}
        })
        expect(account.latest).toEqual({ takenAt: expect.any(String), followers: 2, following: 1, posts: 3 })
        // One credit for each read: 5 - 1 (publishing) - 2.
        expect(yield* team.credit).toEqual({ balance: 2, reserved: 0, available: 2 })

        // A read the AppView refuses as a bad request is not the post's content at fault (as a refused write would be).
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE post_targets SET external_id = 'at://not-a-did/app.bsky.feed.post/x' WHERE post_id = ${post.id}`
        const refused = yield* team.call("POST", `/posts/${post.id}/analytics/refresh`)
        expect(refused.status).toBe(409)
        expect(refused.body.message).toContain(`The bluesky account ${sky.id} could not be read: bluesky unknown (400)`)
        expect(yield* team.credit).toEqual({ balance: 2, reserved: 0, available: 2 })
      }))
  })
})
