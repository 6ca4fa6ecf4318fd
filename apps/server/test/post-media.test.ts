import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { BlueskyNetwork } from "./support/BlueskyNetwork.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { download, noisyPng, upload } from "./support/Media.js"
import { LocalProviders } from "./support/Providers.js"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { makeTestServer } from "./support/TestServer.js"
import { eventually } from "./support/Waiting.js"
import { freshTestStorage } from "./support/TestStorage.js"

const publicUrl = "https://postline.example"

// A PUBLIC_URL, which a webhook's media links need; schedules as near as the scheduling tests take them.
const Server = Layer.merge(
  makeTestServer(Logger.minimumLogLevel(LogLevel.Warning), LocalProviders, freshTestStorage("filesystem")),
  BlueskyNetwork.layer()
).pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(
  new Map([["PUBLIC_URL", publicUrl], ["SCHEDULE_MIN_LEAD_SECONDS", "1"], ["SCHEDULER_POLL_MS", "200"]])
))))

/** A team with `count` images uploaded, with alt texts "Image 1"…; the team's calls. */
const teamWithImages = (count: number) =>
  Effect.gen(function*() {
    const team = yield* publishingTeam(100)
    const assets: Array<{ id: string; url: string; size: number; sha256: string }> = []
    for (let i = 1; i <= count; i++) {
      const { body, status } = yield* upload({
        token: team.admin.token,
        teamId: team.team.id,
        bytes: yield* noisyPng(60 + i, 40 + i),
        fileName: `image-${i}.png`,
        fields: { altText: `Image ${i}` }
      })
      expect(status).toBe(201)
      assets.push(body)
    }
    return { ...team, assets }
  })

layer(Server, { excludeTestServices: true })("posts carry media", (it) => {
  it.effect("a draft takes media in order with its own alt texts; an asset of another team 404, one given twice 400, 11 refused", () =>
    Effect.gen(function*() {
      const { assets, call } = yield* teamWithImages(3)
      const created = yield* call("POST", "/posts", {
        content: "With pictures",
        media: [{ assetId: assets[2].id, altText: "Third, described by the post" }, { assetId: assets[0].id }]
      })
      expect(created.status).toBe(201)
      expect(created.body.media).toEqual([
        { assetId: assets[2].id, altText: "Third, described by the post" },
        { assetId: assets[0].id, altText: null }
      ])
      const read = yield* call("GET", `/posts/${created.body.id}`)
      expect(read.body.media).toEqual(created.body.media)
      const changed = yield* call("PATCH", `/posts/${created.body.id}`, { media: [{ assetId: assets[1].id, altText: null }] })
      expect(changed.body.media).toEqual([{ assetId: assets[1].id, altText: null }])
      expect((yield* call("GET", `/posts/${created.body.id}`)).body.media).toEqual(changed.body.media)

      const other = yield* teamWithImages(1)
      const foreign = yield* call("POST", "/posts", { content: "x", media: [{ assetId: other.assets[0].id }] })
      expect(foreign).toMatchObject({ status: 404, body: { _tag: "NotFound", message: expect.stringContaining(other.assets[0].id) } })
      const twice = yield* call("POST", "/posts", { content: "x", media: [{ assetId: assets[0].id }, { assetId: assets[0].id }] })
      expect(twice).toMatchObject({ status: 400, body: { _tag: "BadRequest" } })
      const eleven = yield* call("POST", "/posts", { content: "x", media: Array.from({ length: 11 }, () => ({ assetId: assets[0].id })) })
      expect(eleven.status).toBe(400)
      const sql = yield* SqlClient.SqlClient
      expect((yield* sql<{ count: number }>`SELECT count(*)::int AS count FROM posts WHERE content = 'x'`)[0].count).toBe(0)
    }))

  it.scoped("one post-now with 4 images to Bluesky (real PDS), Mastodon (fake) and a webhook: per-account results, images and alt texts where each network keeps them", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const mastodon = yield* makeMastodonFake()
      const receiver = yield* makeWebhookReceiver
      const { assets, call, connect, postNow } = yield* teamWithImages(4)
      const pds = yield* Effect.promise(() => network.createAccount({}))
      const bluesky = yield* connect({ provider: "bluesky", handle: pds.handle, appPassword: pds.appPassword, serviceUrl: network.serviceUrl })
      const toot = yield* connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
      const hook = yield* connect({ provider: "webhook", url: `${receiver.url}/hooks` })
      const media = assets.map((asset, i) => ({ assetId: asset.id, ...(i === 1 ? { altText: "Second, the post's words" } : {}) }))
      const post = (yield* call("POST", "/posts", { content: "Four pictures", media })).body
      const alts = ["Image 1", "Second, the post's words", "Image 3", "Image 4"]

      const answer = yield* postNow(post.id, [bluesky.id, toot.id, hook.id])
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      expect(answer.body.outcome).toBe("none_failed")
      expect(answer.body.results.map((result: { status: string }) => result.status)).toEqual(["published", "published", "published"])

      const record = yield* Effect.promise(() => network.getRecord(answer.body.results[0].externalId))
      const embed = record.embed as { $type: string; images: Array<{ alt: string; aspectRatio: unknown }> }
      expect(embed.$type).toBe("app.bsky.embed.images")
      expect(embed.images.map((image) => image.alt)).toEqual(alts)
      expect(embed.images.map((image) => image.aspectRatio)).toEqual([1, 2, 3, 4].map((i) => ({ width: 60 + i, height: 40 + i })))

      const status = mastodon.statuses.at(-1)!
      expect(status.mediaIds).toHaveLength(4)
      const uploaded = status.mediaIds!.map((id) => mastodon.media.find((medium) => medium.id === id)!)
      expect(uploaded.map((medium) => medium.description)).toEqual(alts)
      expect(uploaded.map((medium) => medium.sha256)).toEqual(assets.map((asset) => asset.sha256))
      // Each file was streamed from its temporary copy, not read whole first: the form went chunked.
      const uploads = mastodon.requests.filter((request) => request.path === "/api/v2/media")
      expect(uploads.map((request) => [request.headers["transfer-encoding"], request.headers["content-length"]]))
        .toEqual(assets.map(() => ["chunked", undefined]))

      const event = receiver.received.at(-1)!
      const payload = receiver.verify(event, hook.signingSecret!) as { data: { media: Array<{ assetId: string; altText: string; url: string; urlExpiresAt: string; sha256: string }> } }
      expect(payload.data.media.map((medium) => [medium.assetId, medium.altText])).toEqual(assets.map((asset, i) => [asset.id, alts[i]]))
      for (const medium of payload.data.media) {
        expect(medium.url.startsWith(`${publicUrl}/v1/teams/`)).toBe(true)
        expect(Date.parse(medium.urlExpiresAt)).toBeGreaterThan(Date.now() + 24 * 3600 * 1000)
        // The link works on this server: its path and signature are what the server signed.
        const fetched = yield* download(medium.url.slice(publicUrl.length))
        expect(fetched.status).toBe(200)
        expect(fetched.bytes.length).toBe(assets.find((asset) => asset.id === medium.assetId)!.size)
      }
    }))

  it.scoped("media a provider refuses fail that account before anything is sent: 5 images to Bluesky; estimate holds nothing for it", () =>
    Effect.gen(function*() {
      const network = yield* BlueskyNetwork
      const receiver = yield* makeWebhookReceiver
      const { assets, call, connect, postNow } = yield* teamWithImages(5)
      const pds = yield* Effect.promise(() => network.createAccount({}))
      const bluesky = yield* connect({ provider: "bluesky", handle: pds.handle, appPassword: pds.appPassword, serviceUrl: network.serviceUrl })
      const hook = yield* connect({ provider: "webhook", url: `${receiver.url}/hooks` })
      const post = (yield* call("POST", "/posts", { content: "Five", media: assets.map((asset) => ({ assetId: asset.id })) })).body
      const estimate = yield* call("POST", `/posts/${post.id}/estimate`, { socialAccountIds: [bluesky.id, hook.id] })
      expect(estimate.body.perAccount[0]).toEqual({
        socialAccountId: bluesky.id,
        credits: 0,
        publishes: 0,
        problems: [expect.stringContaining("at most 4 images")]
      })
      const answer = yield* postNow(post.id, [bluesky.id, hook.id])
      expect(answer.body.outcome).toBe("partially_failed")
      expect(answer.body.results[0]).toMatchObject({
        status: "failed",
        error: { category: "invalid_content", message: expect.stringContaining("4"), retryable: false }
      })
      expect(answer.body.results[1].status).toBe("published")
    }))

  it.scoped("an asset a scheduled or published post carries cannot be deleted (409); one only drafts carry can, and leaves them", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { assets, call, connect, postNow } = yield* teamWithImages(3)
      const hook = yield* connect({ provider: "webhook", url: `${receiver.url}/hooks` })
      const scheduled = (yield* call("POST", "/posts", { content: "Later", media: [{ assetId: assets[0].id }] })).body
      const at = new Date(Date.now() + 3600_000).toISOString()
      const scheduling = yield* call("POST", `/posts/${scheduled.id}/schedule`, { socialAccountIds: [hook.id], scheduledAt: at })
      expect(scheduling.status, JSON.stringify(scheduling.body)).toBe(200)
      const refused = yield* call("DELETE", `/assets/${assets[0].id}`)
      expect(refused).toMatchObject({ status: 409, body: { _tag: "Conflict", message: expect.stringContaining("scheduled") } })

      const published = (yield* call("POST", "/posts", { content: "Now", media: [{ assetId: assets[1].id }] })).body
      expect((yield* postNow(published.id, [hook.id])).body.outcome).toBe("none_failed")
      const keep = yield* call("DELETE", `/assets/${assets[1].id}`)
      expect(keep).toMatchObject({ status: 409, body: { _tag: "Conflict", message: expect.stringContaining("published") } })
      // Its media stay readable.
      const asset = (yield* call("GET", `/assets/${assets[1].id}`)).body
      expect((yield* download(asset.url.slice(publicUrl.length))).status).toBe(200)

      const draft = (yield* call("POST", "/posts", { content: "Draft", media: [{ assetId: assets[2].id }, { assetId: assets[0].id }] })).body
      const deleted = yield* call("DELETE", `/assets/${assets[2].id}`)
      expect(deleted.status).toBe(200)
      expect((yield* call("GET", `/posts/${draft.id}`)).body.media).toEqual([{ assetId: assets[0].id, altText: null }])
    }))

  it.scoped("an asset's delete racing a post-now that carries it: either the delete is refused and the post sends the asset, or the post goes without it", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { assets, call, connect, postNow } = yield* teamWithImages(6)
      const hook = yield* connect({ provider: "webhook", url: `${receiver.url}/hooks` })
      for (const asset of assets) {
        const post = (yield* call("POST", "/posts", { content: `Race ${asset.id}`, media: [{ assetId: asset.id }] })).body
        const [deleted, published] = yield* Effect.all([call("DELETE", `/assets/${asset.id}`), postNow(post.id, [hook.id])], {
          concurrency: 2
        })
        expect(published.body.outcome).toBe("none_failed")
        const event = receiver.received.find((received) => received.body.includes(post.id))!
        const sent = (receiver.verify(event, hook.signingSecret!) as { data: { media: Array<{ assetId: string }> } }).data.media
        if (deleted.status === 200) expect(sent).toEqual([])
        else {
          expect(deleted).toMatchObject({ status: 409, body: { _tag: "Conflict" } })
          expect(sent.map((medium) => medium.assetId)).toEqual([asset.id])
        }
      }
    }))

  it.scoped("a scheduled post sends its media when it comes due: the webhook's signed event lists them", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { assets, call, connect, scheduleSoon } = yield* teamWithImages(2)
      const hook = yield* connect({ provider: "webhook", url: `${receiver.url}/hooks` })
      const post = (yield* call("POST", "/posts", { content: "Later", media: [{ assetId: assets[1].id }, { assetId: assets[0].id }] })).body
      const scheduling = (yield* scheduleSoon(post.id, [hook.id], 2)).answer
      expect(scheduling.status, JSON.stringify(scheduling.body)).toBe(200)
      const done = yield* eventually(call("GET", `/posts/${post.id}`), (response) => response.body.status === "published")
      expect(done.body.status).toBe("published")
      const payload = receiver.verify(receiver.received.at(-1)!, hook.signingSecret!) as { data: { media: Array<{ assetId: string }> } }
      expect(payload.data.media.map((medium) => medium.assetId)).toEqual([assets[1].id, assets[0].id])
    }))
})

const WithoutPublicUrl = makeTestServer(Logger.minimumLogLevel(LogLevel.Warning))

layer(WithoutPublicUrl, { excludeTestServices: true })("posts carry media, on a server without PUBLIC_URL", (it) => {
  it.scoped("a webhook, which gets media as links, fails at once with invalid_content: nothing is sent", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { assets, call, connect, postNow } = yield* teamWithImages(1)
      const hook = yield* connect({ provider: "webhook", url: `${receiver.url}/hooks` })
      const post = (yield* call("POST", "/posts", { content: "Linked", media: [{ assetId: assets[0].id }] })).body
      const answer = yield* postNow(post.id, [hook.id])
      expect(answer.body.results[0]).toMatchObject({
        status: "failed",
        error: { category: "invalid_content", message: expect.stringContaining("PUBLIC_URL"), retryable: false }
      })
      expect(receiver.received).toEqual([])
    }))
})
