import { expect, layer } from "@effect/vitest"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { BlueskyNetwork } from "./support/BlueskyNetwork.js"
import { makeMastodonFake } from "./support/MastodonFake.js"
import { noisyPng, upload } from "./support/Media.js"
import { LocalProviders } from "./support/Providers.js"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { makeTestServer } from "./support/TestServer.js"
import { freshTestStorage } from "./support/TestStorage.js"

// A PUBLIC_URL, which a webhook's media links need.
const Server = Layer.merge(
  makeTestServer(Logger.minimumLogLevel(LogLevel.Warning), LocalProviders, freshTestStorage("filesystem")),
  BlueskyNetwork.layer()
).pipe(Layer.provide(Layer.setConfigProvider(
  ConfigProvider.fromMap(new Map([["PUBLIC_URL", "https://postline.example"]])).pipe(
    ConfigProvider.orElse(() => ConfigProvider.fromEnv())
  )
)))

/** A team with credits, `images` uploaded, and a Bluesky account (real PDS), a Mastodon account (fake) and a webhook. */
const threadTeam = (images: number) =>
  Effect.gen(function*() {
    const team = yield* publishingTeam(100)
    const assets: Array<{ id: string }> = []
    for (let i = 1; i <= images; i++) {
      const { body } = yield* upload({
        token: team.admin.token,
        teamId: team.team.id,
        bytes: yield* noisyPng(30 + i, 20 + i),
        fileName: `image-${i}.png`,
        fields: { altText: `Image ${i}` }
      })
      assets.push(body)
    }
    const network = yield* BlueskyNetwork
    const mastodon = yield* makeMastodonFake({ processImagesAtOnce: true })
    const receiver = yield* makeWebhookReceiver
    const pds = yield* Effect.promise(() => network.createAccount({}))
    const sky = yield* team.connect({ provider: "bluesky", handle: pds.handle, appPassword: pds.appPassword, serviceUrl: network.serviceUrl })
    const toot = yield* team.connect({ provider: "mastodon", instanceUrl: mastodon.url, accessToken: mastodon.token })
    const hook = yield* team.connect({ provider: "webhook", url: `${receiver.url}/hooks` })
    return { ...team, assets, network, mastodon, receiver, sky, toot, hook }
  })

const sentParts = (postId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ account: string; position: number; externalId: string; reference: string | null }>`SELECT
        social_account_id AS account, position, external_id AS "externalId", reference
      FROM post_target_parts WHERE post_id = ${postId} ORDER BY social_account_id, position`)

layer(Server, { excludeTestServices: true })("threads, versions and first comments", (it) => {
  it.scoped("a draft carries a thread, a first comment and versions, read back as given; limits and foreign ids refused", () =>
    Effect.gen(function*() {
      const { assets, call, connect } = yield* threadTeam(2)
      const receiver = yield* makeWebhookReceiver
      const other = yield* connect({ provider: "webhook", url: `${receiver.url}/other` })
      const draft = {
        content: "Part one",
        media: [{ assetId: assets[0].id }],
        thread: [{ content: "Part two", media: [{ assetId: assets[1].id, altText: "Two" }] }, { content: "Part three" }],
        firstComment: { content: "Links in the comments: https://example.com" },
        versions: [{ socialAccountId: other.id, content: "Short one", thread: [] }]
      }
      const created = yield* call("POST", "/posts", draft)
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      const expected = {
        content: "Part one",
        media: [{ assetId: assets[0].id, altText: null }],
        thread: [
          { content: "Part two", media: [{ assetId: assets[1].id, altText: "Two" }] },
          { content: "Part three", media: [] }
        ],
        firstComment: { content: "Links in the comments: https://example.com", media: [] },
        versions: [{ socialAccountId: other.id, content: "Short one", media: null, thread: [] }]
      }
      expect(created.body).toMatchObject(expected)
      const read = yield* call("GET", `/posts/${created.body.id}`)
      expect(read.body).toMatchObject(expected)
      expect(read.body).toEqual(created.body)

      // A change replaces what it gives, and leaves the rest.
      const changed = yield* call("PATCH", `/posts/${created.body.id}`, { thread: [{ content: "Only reply" }], firstComment: null })
      expect(changed.body).toMatchObject({
        content: "Part one",
        thread: [{ content: "Only reply", media: [] }],
        firstComment: null,
        versions: expected.versions
      })
      expect((yield* call("GET", `/posts/${created.body.id}`)).body).toEqual(changed.body)

      // 25 parts in all at most; one version per account; the accounts and assets must be the team's.
      const part = { content: "x" }
      expect((yield* call("POST", "/posts", { content: "a", thread: Array.from({ length: 24 }, () => part) })).status).toBe(201)
      const tooMany = yield* call("POST", "/posts", { content: "a", thread: Array.from({ length: 25 }, () => part) })
      expect(tooMany).toMatchObject({ status: 400, body: { _tag: "HttpApiDecodeError" } })
      const twice = yield* call("POST", "/posts", {
        content: "a",
        versions: [{ socialAccountId: other.id, content: "b" }, { socialAccountId: other.id, content: "c" }]
      })
      expect(twice).toMatchObject({ status: 400, body: { _tag: "HttpApiDecodeError" } })
      const stranger = yield* publishingTeam()
      const foreignAccount = yield* stranger.connect({ provider: "webhook", url: `${receiver.url}/stranger` })
      const foreign = yield* call("POST", "/posts", { content: "a", versions: [{ socialAccountId: foreignAccount.id, content: "b" }] })
      expect(foreign).toMatchObject({ status: 404, body: { _tag: "NotFound", message: expect.stringContaining(foreignAccount.id) } })
      const foreignMedia = yield* stranger.call("POST", "/posts", { content: "a", thread: [{ content: "b", media: [{ assetId: assets[0].id }] }] })
      expect(foreignMedia).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
      const blank = yield* call("POST", "/posts", { content: "a", firstComment: { content: "   " } })
      expect(blank).toMatchObject({ status: 400, body: { _tag: "HttpApiDecodeError" } })
    }))

  it.scoped("a 3-part thread with media and a first comment goes out as each network's own thread, each part once", () =>
    Effect.gen(function*() {
      const { assets, call, credit, hook, mastodon, network, postNow, receiver, sky, toot } = yield* threadTeam(2)
      const post = (yield* call("POST", "/posts", {
        content: "1/3 The tide",
        media: [{ assetId: assets[0].id }],
        thread: [{ content: "2/3 comes in", media: [{ assetId: assets[1].id }] }, { content: "3/3 and goes out" }],
        firstComment: { content: "Tide tables: https://example.com/tides" }
      })).body

      const estimate = yield* call("POST", `/posts/${post.id}/estimate`, { socialAccountIds: [sky.id, toot.id, hook.id] })
      expect(estimate.body.perAccount).toEqual([
        { socialAccountId: sky.id, credits: 4, publishes: 4, problems: [] },
        { socialAccountId: toot.id, credits: 4, publishes: 4, problems: [] },
        { socialAccountId: hook.id, credits: 0, publishes: 4, problems: [] }
      ])
      const answer = yield* postNow(post.id, [sky.id, toot.id, hook.id])
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      expect(answer.body.outcome).toBe("none_failed")
      const [skyResult, tootResult, hookResult] = answer.body.results
      expect(skyResult.parts.map((part: any) => part.position)).toEqual([1, 2, 3])
      expect(skyResult.externalId).toBe(skyResult.parts[0].externalId)
      expect(skyResult.firstComment).toMatchObject({ status: "published", externalId: expect.stringMatching(/^at:\/\//), error: null })
      expect(tootResult.parts.map((part: any) => part.externalId)).toEqual(mastodon.statuses.slice(0, 3).map((status) => status.id))
      expect(hookResult.parts).toHaveLength(3)
      expect((yield* credit).balance).toBe(100 - 8)

      // Bluesky: each reply names the thread's first part as root and the part before as parent, with their CIDs.
      const stored = yield* sentParts(post.id)
      const skyParts = stored.filter((part) => part.account === sky.id)
      const [first, second, third] = skyParts.filter((part) => part.position > 0)
      const comment = skyParts.find((part) => part.position === 0)!
      const records = yield* Effect.promise(() => Promise.all([first, second, third, comment].map((part) => network.getRecord(part.externalId))))
      // The comment's link is tracked, as the team's posts' links are: a code of 16 base64url characters.
      const tracked = expect.stringMatching(/^Tide tables: https:\/\/postline\.example\/l\/[\w-]{16}$/)
      expect(records.map((record) => record.text)).toEqual(["1/3 The tide", "2/3 comes in", "3/3 and goes out", tracked])
      expect(records[0].reply).toBeUndefined()
      const ref = (part: typeof first) => ({ uri: part.externalId, cid: part.reference })
      expect(records[1].reply).toEqual({ root: ref(first), parent: ref(first) })
      expect(records[2].reply).toEqual({ root: ref(first), parent: ref(second) })
      expect(records[3].reply).toEqual({ root: ref(first), parent: ref(third) })
      expect((records[0].embed as any).images).toHaveLength(1)
      expect((records[1].embed as any).images).toHaveLength(1)
      expect(records[2].embed).toBeUndefined()

      // Mastodon: a chain of replies, each under its own key, with its own media.
      const key = `${post.id}:${toot.id}`
      expect(mastodon.statuses.map(({ idempotencyKey, inReplyToId, mediaIds, text }) => ({ idempotencyKey, inReplyToId, media: mediaIds?.length, text })))
        .toEqual([
          { idempotencyKey: key, inReplyToId: undefined, media: 1, text: "1/3 The tide" },
          { idempotencyKey: `${key}:2`, inReplyToId: mastodon.statuses[0].id, media: 1, text: "2/3 comes in" },
          { idempotencyKey: `${key}:3`, inReplyToId: mastodon.statuses[1].id, media: undefined, text: "3/3 and goes out" },
          { idempotencyKey: `${key}:comment`, inReplyToId: mastodon.statuses[2].id, media: undefined, text: tracked }
        ])

      // The webhook: one signed event with every part and the comment.
      expect(receiver.received).toHaveLength(1)
      const event = receiver.verify(receiver.received[0], hook.signingSecret!) as any
      expect(event.data.text).toBe("1/3 The tide")
      expect(event.data.media).toHaveLength(1)
      expect(event.data.thread.map((part: any) => [part.text, part.media.length])).toEqual([["2/3 comes in", 1], ["3/3 and goes out", 0]])
      expect(event.data.firstComment).toEqual({ text: tracked, media: [] })

      const read = (yield* call("GET", `/posts/${post.id}`)).body
      expect(read.status).toBe("published")
      expect(read.targets.find((target: any) => target.socialAccountId === sky.id)).toMatchObject({
        parts: skyResult.parts,
        firstComment: skyResult.firstComment
      })
    }))

  it.scoped("versions reach their own account; a part too long for one network fails that account alone, before anything is sent", () =>
    Effect.gen(function*() {
      const { call, mastodon, network, postNow, sky, toot } = yield* threadTeam(0)
      const long = "A long read. ".repeat(30).trim()
      const post = (yield* call("POST", "/posts", {
        content: long,
        versions: [{ socialAccountId: sky.id, content: "The short one", thread: [{ content: "and its reply" }] }]
      })).body
      const answer = yield* postNow(post.id, [sky.id, toot.id])
      expect(answer.body.outcome, JSON.stringify(answer.body)).toBe("none_failed")
      const [skyResult] = answer.body.results
      expect(skyResult.parts).toHaveLength(2)
      const records = yield* Effect.promise(() => Promise.all(skyResult.parts.map((part: any) => network.getRecord(part.externalId))))
      expect(records.map((record) => record.text)).toEqual(["The short one", "and its reply"])
      expect(mastodon.statuses.map((status) => status.text)).toEqual([long])

      // Without the version, Bluesky's 300 characters refuse part 2: that account fails, at no cost, nothing sent.
      const thread = (yield* call("POST", "/posts", { content: "Short", thread: [{ content: long }] })).body
      const estimate = yield* call("POST", `/posts/${thread.id}/estimate`, { socialAccountIds: [sky.id, toot.id] })
      expect(estimate.body.perAccount[0]).toEqual({
        socialAccountId: sky.id,
        credits: 0,
        publishes: 0,
        problems: [expect.stringMatching(/^Part 2: .*300/)]
      })
      const refused = yield* postNow(thread.id, [sky.id, toot.id])
      expect(refused.body.results[0]).toMatchObject({
        status: "failed",
        parts: [],
        error: { category: "invalid_content", message: expect.stringContaining("Part 2:"), retryable: false }
      })
      expect(refused.body.results[1]).toMatchObject({ status: "published", parts: [{ position: 1 }, { position: 2 }] })
    }))

  it.scoped("a first comment the network refuses leaves the post published, says why, and is not paid for", () =>
    Effect.gen(function*() {
      const { call, credit, mastodon, postNow, toot } = yield* threadTeam(0)
      const post = (yield* call("POST", "/posts", { content: "Main post", firstComment: { content: "A comment" } })).body
      mastodon.answerStatusWithText("A comment", { status: 422, body: { error: "Validation failed: Text looks like spam" } })
      const answer = yield* postNow(post.id, [toot.id])
      expect(answer.body).toMatchObject({
        outcome: "none_failed",
        results: [{
          status: "published",
          creditsSpent: 1,
          parts: [{ position: 1, externalId: mastodon.statuses[0].id }],
          firstComment: { status: "failed", externalId: null, url: null, error: "Validation failed: Text looks like spam" }
        }]
      })
      expect(mastodon.statuses.map((status) => status.text)).toEqual(["Main post"])
      expect(yield* credit).toEqual({ balance: 99, reserved: 0, available: 99 })
      expect((yield* call("GET", `/posts/${post.id}`)).body.targets[0]).toMatchObject({
        status: "published",
        creditsSpent: 1,
        firstComment: { status: "failed" }
      })
    }))
})
