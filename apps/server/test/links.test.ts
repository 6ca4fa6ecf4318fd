import { describe, expect, it, layer } from "@effect/vitest"
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Logger, LogLevel } from "effect"
import { findLinks, replaceLinks } from "../src/Links/Detection.js"
import { graphemeLength, lengthProblems } from "../src/Providers/TextLength.js"
import { makeWebhookReceiver, publishingTeam } from "./support/Publishing.js"
import { makeTestServer, raw } from "./support/TestServer.js"

const publicUrl = "https://go.postline.example"
const shortLink = /https:\/\/go\.postline\.example\/l\/([A-Za-z0-9_-]{16})/g

/** The test server with this configuration in place of the environment. */
const serverWith = (config: Record<string, string>) =>
  makeTestServer(Logger.minimumLogLevel(LogLevel.Warning)).pipe(
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(config)))))
  )

const linksOf = (text: string) => findLinks(text).map((link) => link.url)

/** A GET that does not follow redirects, as a browser's first request. */
const click = (path: string) =>
  Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    const port = (server.address as HttpServer.TcpAddress).port
    const response = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}${path}`, { redirect: "manual" }))
    const text = yield* Effect.promise(() => response.text())
    return {
      status: response.status,
      location: response.headers.get("location"),
      cacheControl: response.headers.get("cache-control"),
      contentType: response.headers.get("content-type"),
      body: response.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : text
    }
  })

/** The text each webhook call carried, in order. */
const textsOf = (receiver: { received: ReadonlyArray<{ body: string }> }) =>
  receiver.received.map((event) => JSON.parse(event.body).data.text as string)

const codesIn = (text: string) => Array.from(text.matchAll(shortLink), (match) => match[1])

describe("link detection", () => {
  it("finds http(s) links as people write them in a sentence", () => {
    expect(linksOf("Launch day! https://example.com #postline")).toEqual(["https://example.com"])
    expect(linksOf("See https://example.com. Or http://example.org/a, or https://example.net/b; or https://x.io/c!"))
      .toEqual(["https://example.com", "http://example.org/a", "https://example.net/b", "https://x.io/c"])
    expect(linksOf("Really?https://a.com/x? 'https://b.com/y' \"https://c.com/z\" <https://d.com/w>"))
      .toEqual(["https://a.com/x", "https://b.com/y", "https://c.com/z", "https://d.com/w"])
    expect(linksOf("Docs: https://example.com/path/to/page?q=1&r=two#section-3...")).toEqual([
      "https://example.com/path/to/page?q=1&r=two#section-3"
    ])
    expect(linksOf("Port and path https://localhost:8080/a/b/ end")).toEqual(["https://localhost:8080/a/b/"])
    expect(linksOf("HTTPS://EXAMPLE.COM/Upper and Http://Example.com")).toEqual(["HTTPS://EXAMPLE.COM/Upper", "Http://Example.com"])
  })

  it("leaves out a closing bracket the URL did not open, and keeps one it did", () => {
    expect(linksOf("(see https://example.com)")).toEqual(["https://example.com"])
    expect(linksOf("(see https://example.com/a).")).toEqual(["https://example.com/a"])
    expect(linksOf("https://en.wikipedia.org/wiki/Mercury_(planet)")).toEqual(["https://en.wikipedia.org/wiki/Mercury_(planet)"])
    expect(linksOf("(https://en.wikipedia.org/wiki/Mercury_(planet)).")).toEqual(["https://en.wikipedia.org/wiki/Mercury_(planet)"])
    expect(linksOf("[the docs](https://example.com/docs)")).toEqual(["https://example.com/docs"])
    expect(linksOf("[x] https://example.com/list[1] and {https://example.com/}")).toEqual([
      "https://example.com/list[1]",
      "https://example.com/"
    ])
  })

  it("stops at emoji, invisible characters and Chinese or Japanese punctuation; keeps other scripts", () => {
    expect(linksOf("Fire https://example.com/a🔥 now")).toEqual(["https://example.com/a"])
    expect(linksOf("zero\u200Bwidth https://example.com/a\u200Bb")).toEqual(["https://example.com/a"])
    expect(linksOf("詳しくは https://例え.jp/パス。次へ")).toEqual(["https://例え.jp/パス"])
    expect(linksOf("看这里：https://example.cn/页面，谢谢")).toEqual(["https://example.cn/页面"])
    expect(linksOf("Ελληνικά https://παράδειγμα.gr/σελίδα.")).toEqual(["https://παράδειγμα.gr/σελίδα"])
  })

  it("ignores what is not an http(s) link", () => {
    expect(linksOf("ftp://example.com mailto:a@example.com example.com www.example.com")).toEqual([])
    expect(linksOf("xhttps://example.com and https:// and https://. and https://...")).toEqual([])
    expect(linksOf("no links at all")).toEqual([])
  })

  it("replaces each occurrence where it is, and nothing else", () => {
    const text = "A https://a.com, B (https://b.com/x) and A again https://a.com."
    const links = findLinks(text)
    expect(links.map((link) => text.slice(link.start, link.end))).toEqual(["https://a.com", "https://b.com/x", "https://a.com"])
    expect(replaceLinks(text, links, (url) => `<${url.length}>`)).toBe("A <13>, B (<15>) and A again <13>.")
    expect(replaceLinks("🦋 https://a.com 🦋", findLinks("🦋 https://a.com 🦋"), () => "L")).toBe("🦋 L 🦋")
  })

  it("Bluesky's 300 graphemes are counted on the rewritten text", () => {
    const written = `${"x".repeat(280)} https://example.com`
    const limits = { maxLength: 300, urlLength: null }
    expect(graphemeLength(written)).toBe(300)
    expect(lengthProblems(written, graphemeLength(written), limits)).toEqual([])
    const sent = replaceLinks(written, findLinks(written), () => `${publicUrl}/l/${"A".repeat(16)}`)
    expect(lengthProblems(sent, graphemeLength(sent), limits)).toMatchObject([{ code: "too_long", length: 327, maxLength: 300 }])
  })
})

layer(serverWith({ PUBLIC_URL: `${publicUrl}/` }), { excludeTestServices: true })("link tracking with PUBLIC_URL", (it) => {
  it.scoped("post-now sends short links, one code per distinct URL; they redirect to the original and count clicks", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { call, connect, draft, postNow } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const content = "Read https://example.com/a?x=1 and (https://example.org/b), then https://example.com/a?x=1 again. #launch"
      const post = yield* draft(content)
      const published = yield* postNow(post.id, [hook.id])
      expect(published.body).toMatchObject({ outcome: "none_failed", results: [{ status: "published" }] })

      const [sent] = textsOf(receiver)
      const [first, second, third] = codesIn(sent)
      expect(first).not.toBe(second)
      expect(third).toBe(first)
      expect(sent).toBe(
        `Read ${publicUrl}/l/${first} and (${publicUrl}/l/${second}), then ${publicUrl}/l/${first} again. #launch`
      )
      // The post keeps its content as written.
      expect((yield* call("GET", `/posts/${post.id}`)).body.content).toBe(content)

      const followed = yield* click(`/l/${first}`)
      expect(followed).toMatchObject({ status: 302, location: "https://example.com/a?x=1", cacheControl: "no-store" })
      expect((yield* click(`/l/${second}`)).location).toBe("https://example.org/b")
      // Clicks at once are each counted.
      yield* Effect.forEach(Array.from({ length: 20 }), () => click(`/l/${second}`), { concurrency: "unbounded" })

      const listed = yield* call("GET", `/posts/${post.id}/links?sortOrder=asc`)
      expect(listed.status).toBe(200)
      expect(listed.body).toMatchObject({ total: 2, nextCursor: null, prevCursor: null })
      for (const link of listed.body.data) expect(Object.keys(link).sort()).toEqual(["clicks", "code", "createdAt", "shortUrl", "url"])
      expect([...listed.body.data].sort((a: any, b: any) => a.url.localeCompare(b.url))).toEqual([
        { code: first, url: "https://example.com/a?x=1", shortUrl: `${publicUrl}/l/${first}`, clicks: 1, createdAt: expect.any(String) },
        { code: second, url: "https://example.org/b", shortUrl: `${publicUrl}/l/${second}`, clicks: 21, createdAt: expect.any(String) }
      ])
      // Pages of one, with cursors.
      const page = yield* call("GET", `/posts/${post.id}/links?limit=1`)
      expect(page.body.data).toHaveLength(1)
      const next = yield* call("GET", `/posts/${post.id}/links?limit=1&cursor=${encodeURIComponent(page.body.nextCursor)}`)
      expect(next.body.data.map((link: any) => link.code)).not.toContain(page.body.data[0].code)
      expect(next.body.nextCursor).toBeNull()
    }))

  it.scoped("an unknown or malformed code is 404 JSON and counts nothing", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { call, connect, draft, postNow } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const post = yield* draft("One link: https://example.com/one")
      expect((yield* postNow(post.id, [hook.id])).status).toBe(200)
      const [code] = codesIn(textsOf(receiver)[0])
      // Codes match exactly: not in another case, nor with a character more or less.
      const near = [code.toLowerCase() === code ? code.toUpperCase() : code.toLowerCase(), `${code}A`, code.slice(1)]
      for (const path of [...near.map((other) => `/l/${other}`), "/l/AAAAAAAAAAAAAAAA", "/l/%00%00", `/l/${"A".repeat(200)}`, "/l/"]) {
        const response = yield* click(path)
        expect(response.status, path).toBe(404)
        expect(response.contentType, path).toMatch(/^application\/json/)
        expect(Object.keys(response.body).sort(), path).toEqual(["_tag", "message"])
        expect(response.body._tag).toBe("NotFound")
      }
      expect((yield* call("GET", `/posts/${post.id}/links`)).body.data).toMatchObject([{ code, clicks: 0 }])
    }))

  it.scoped("a retry reuses the codes: every account and every attempt gets the same text", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { call, connect, draft, postNow } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const other = yield* connect({ provider: "webhook", url: `${receiver.url}/other` })
      const post = yield* draft("New release: https://example.com/release and https://example.com/notes")
      receiver.answerWith((_event, response) => response.writeHead(503).end())
      const failed = yield* postNow(post.id, [hook.id, other.id])
      expect(failed.body.outcome).toBe("all_failed")
      receiver.answerWith((_event, response) => response.writeHead(204).end())
      expect((yield* postNow(post.id, [hook.id])).body.outcome).toBe("none_failed")
      expect((yield* postNow(post.id, [other.id])).body.outcome).toBe("none_failed")

      const texts = textsOf(receiver)
      expect(texts).toHaveLength(4)
      expect(new Set(texts).size).toBe(1)
      expect(codesIn(texts[0])).toHaveLength(2)
      const listed = yield* call("GET", `/posts/${post.id}/links`)
      expect(listed.body.total).toBe(2)
      expect(listed.body.data.map((link: any) => link.code).sort()).toEqual(codesIn(texts[0]).sort())
    }))

  it.scoped("links are sent as written when the post says false, or the team does and the post follows it", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { call, connect, draft, postNow } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const content = "Untracked: https://example.com/plain"

      const ownChoice = yield* call("POST", "/posts", { content, linkTracking: false })
      expect((yield* postNow(ownChoice.body.id, [hook.id])).body.outcome).toBe("none_failed")
      expect(textsOf(receiver)[0]).toBe(content)
      expect((yield* call("GET", `/posts/${ownChoice.body.id}/links`)).body).toMatchObject({ data: [], total: 0 })

      expect((yield* call("PATCH", "", { linkTrackingDefault: false })).body.linkTrackingDefault).toBe(false)
      const following = yield* draft(content)
      expect((yield* postNow(following.id, [hook.id])).body.outcome).toBe("none_failed")
      expect(textsOf(receiver)[1]).toBe(content)
      expect((yield* call("GET", `/posts/${following.id}/links`)).body.total).toBe(0)

      // The post's own true wins over the team's false.
      const tracked = yield* call("POST", "/posts", { content, linkTracking: true })
      expect((yield* postNow(tracked.body.id, [hook.id])).body.outcome).toBe("none_failed")
      expect(codesIn(textsOf(receiver)[2])).toHaveLength(1)
      expect((yield* call("GET", `/posts/${tracked.body.id}/links`)).body.total).toBe(1)
    }))

  it.effect("providers check the rewritten text: a Bluesky text that fits only as written fails with invalid_content", () =>
    Effect.gen(function*() {
      const { call, team } = yield* publishingTeam(10)
      const sql = yield* SqlClient.SqlClient
      // A Bluesky account as connecting one leaves it; nothing reaches Bluesky, since the check refuses the text first.
      const [sky] = yield* sql<{ id: string }>`INSERT INTO social_accounts (team_id, provider, handle, credentials, content_limits)
        VALUES (${team.id}, 'bluesky', 'alice.bsky.social', 'not-used', '{"maxLength":300,"urlLength":null}') RETURNING id`
      const content = `${"x".repeat(280)} https://example.com`
      const tracked = (yield* call("POST", "/posts", { content })).body
      const untracked = (yield* call("POST", "/posts", { content, linkTracking: false })).body

      const estimate = (postId: string) => call("POST", `/posts/${postId}/estimate`, { socialAccountIds: [sky.id] })
      expect((yield* estimate(tracked.id)).body).toMatchObject({ total: 0, perAccount: [{ credits: 0 }] })
      expect((yield* estimate(untracked.id)).body).toMatchObject({ total: 1, perAccount: [{ credits: 1 }] })

      const refused = yield* call("POST", `/posts/${tracked.id}/post-now`, { socialAccountIds: [sky.id] })
      expect(refused.body).toMatchObject({
        outcome: "all_failed",
        results: [{
          status: "failed",
          creditsSpent: 0,
          error: { category: "invalid_content", message: "The text is 327 characters long; the limit is 300", retryable: false }
        }]
      })
    }))

  it.effect("the links list: 404 for a post of another team or none, and a strict query", () =>
    Effect.gen(function*() {
      const { call, draft } = yield* publishingTeam()
      const post = yield* draft("https://example.com")
      expect((yield* call("GET", `/posts/${post.id}/links`)).body).toEqual({ data: [], total: 0, nextCursor: null, prevCursor: null })
      const elsewhere = yield* publishingTeam()
      expect(yield* elsewhere.call("GET", `/posts/${post.id}/links`)).toMatchObject({ status: 404, body: { _tag: "NotFound" } })
      expect((yield* call("GET", `/posts/${post.id}/links?sortBy=name`)).status).toBe(400)
      expect((yield* call("GET", `/posts/${post.id}/links?unknown=1`)).status).toBe(400)
      expect((yield* raw({ method: "GET", path: `/v1/teams/${elsewhere.team.id}/posts/${post.id}/links` })).status).toBe(401)
    }))
})

layer(serverWith({ PUBLIC_URL: publicUrl, PLAN_LINK_TRACKING_DEFAULT: "false" }), { excludeTestServices: true })(
  "link tracking with the plan's default off",
  (it) => {
    it.scoped("a post following a team that follows the plan sends its links as written; the post's true tracks", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        const { call, connect, draft, postNow } = yield* publishingTeam()
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        const content = "Plan: https://example.com/plan"
        const following = yield* draft(content)
        expect((yield* postNow(following.id, [hook.id])).body.outcome).toBe("none_failed")
        const tracked = yield* call("POST", "/posts", { content, linkTracking: true })
        expect((yield* postNow(tracked.body.id, [hook.id])).body.outcome).toBe("none_failed")
        const [asWritten, rewritten] = textsOf(receiver)
        expect(asWritten).toBe(content)
        expect(rewritten).toMatch(/^Plan: https:\/\/go\.postline\.example\/l\/[A-Za-z0-9_-]{16}$/)
      }))
  }
)

layer(serverWith({}), { excludeTestServices: true })("link tracking without PUBLIC_URL", (it) => {
  it.scoped("links are sent as written, and no code is made", () =>
    Effect.gen(function*() {
      const receiver = yield* makeWebhookReceiver
      const { call, connect, postNow } = yield* publishingTeam()
      const hook = yield* connect({ provider: "webhook", url: receiver.url })
      const content = "Tracked if it could be: https://example.com/x"
      const post = yield* call("POST", "/posts", { content, linkTracking: true })
      expect((yield* postNow(post.body.id, [hook.id])).body.outcome).toBe("none_failed")
      expect(textsOf(receiver)).toEqual([content])
      expect((yield* call("GET", `/posts/${post.body.id}/links`)).body.total).toBe(0)
      const sql = yield* SqlClient.SqlClient
      expect(yield* sql`SELECT 1 FROM post_links`).toEqual([])
    }))
})

layer(serverWith({ PUBLIC_URL: publicUrl, SCHEDULE_MIN_LEAD_SECONDS: "1", SCHEDULER_POLL_MS: "200" }), { excludeTestServices: true })(
  "link tracking of scheduled posts",
  (it) => {
    it.scoped("a scheduled post is sent with the short links made when it was scheduled", () =>
      Effect.gen(function*() {
        const receiver = yield* makeWebhookReceiver
        const { call, connect, scheduleSoon } = yield* publishingTeam()
        const hook = yield* connect({ provider: "webhook", url: receiver.url })
        const post = yield* call("POST", "/posts", { content: "Later: https://example.com/later", linkTracking: true })
        expect((yield* scheduleSoon(post.body.id, [hook.id], 1.5)).answer.status).toBe(200)
        const made = (yield* call("GET", `/posts/${post.body.id}/links`)).body.data.map((link: any) => link.code)
        expect(made).toHaveLength(1)
        const until = Date.now() + 120_000
        while (receiver.received.length === 0 && Date.now() < until) yield* Effect.sleep("100 millis")
        expect(textsOf(receiver)).toEqual([`Later: ${publicUrl}/l/${made[0]}`])
      }))
  }
)
