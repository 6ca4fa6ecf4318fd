/**
 * A FAKE X (api.x.com and x.com's sign-in page): X cannot be reached here, so the tests run against this node:http
 * server, which checks what X documents for the calls Postline makes:
 * - docs.x.com/resources/fundamentals/authentication/oauth-2-0/authorization-code and …/oauth-2-0/user-access-token:
 *   `GET /i/oauth2/authorize` (the registered client_id, a redirect_uri registered exactly, response_type=code, S256,
 *   known scopes, a state) answers a consent page whose forms POST back and redirect (302) with code and state or
 *   error=access_denied; `POST /2/oauth2/token` (HTTP Basic for this confidential client) checks the code's PKCE
 *   verifier and redirect_uri and takes it once; access tokens expire (two hours, or as a test sets); a refresh token
 *   comes with offline.access, is rotated at each refresh, and one used twice revokes its whole grant
 *   (invalid_grant); `POST /2/oauth2/revoke` (a refresh token ends its grant; an unknown token is no error).
 * - docs.x.com/x-api/fundamentals/rate-limits: `x-rate-limit-limit/remaining/reset` on answers, 429 past a limit;
 *   docs.x.com/x-api/fundamentals/response-codes-and-errors: problem bodies (`title`, `detail`, `type`, `status`).
 * - docs.x.com/x-api/users/user-lookup-me, /x-api/posts/create-or-edit-post, /x-api/posts/manage-tweets/introduction,
 *   /x-api/posts/lookup/integrate: users/me (with `public_metrics` when asked), POST /2/tweets (280 weighted characters
 *   with twitter-text, no duplicate of a live post, a reply to a post it has, finalized and processed media, 4 images
 *   or 1 video or GIF), DELETE /2/tweets/:id (the account's own only), GET /2/tweets?ids= (100 at most, public_metrics).
 * - docs.x.com/x-api/media/quickstart/media-upload-chunked, /x-api/media/initialize-media-upload, append-media-upload,
 *   media-upload-finalize, get-media-upload-status, create-media-metadata, introduction (sizes): segments in order,
 *   all bytes before FINALIZE, videos and GIFs processed (STATUS) before a post may name them, alt text ≤ 1000.
 * Each call checks the bearer token and the scopes X asks for it. It records requests, grants (with how often each
 * was refreshed), posts and uploads for assertions.
 */
import { Effect, Layer, Redacted } from "effect"
import { XSettings } from "../../src/Providers/XSettings.js"
import type { IncomingHttpHeaders } from "node:http"
import twitterText from "twitter-text"
import { makeLocalServer } from "./LocalServer.js"
import { makeXFakeOAuth, problem } from "./XFakeOAuth.js"

export type { XGrant } from "./XFakeOAuth.js"

export interface XReceivedRequest { readonly method: string; readonly path: string; readonly headers: IncomingHttpHeaders; readonly body: string }
export interface XFakeTweet { readonly id: string; readonly authorId: string; readonly text: string; readonly mediaIds?: ReadonlyArray<string>; readonly inReplyToId?: string }
export interface XFakeUpload {
  readonly id: string; readonly mediaType: string; readonly category: string; readonly totalBytes: number
  readonly chunks: Array<Buffer>; finalized: boolean; pollsLeft: number; altText: string | null
}
export interface XCanned { readonly status: number; readonly headers?: Record<string, string>; readonly body?: unknown }
export interface XPublicMetrics { like_count: number; retweet_count: number; reply_count: number; quote_count: number; impression_count: number }

export interface XFakeOptions {
  /** Seconds an access token lives: X's two hours unless a test says less. */
  readonly accessTokenSeconds?: number
  /** STATUS polls of a video or GIF answering in_progress before the one answering succeeded (1 by default). */
  readonly processingPolls?: number
  /** What X tells to wait between STATUS polls (1 s by default). */
  readonly checkAfterSecs?: number
}

const mediaLimits: Record<string, number> = { tweet_image: 5 * 1024 * 1024, tweet_gif: 15 * 1024 * 1024, amplify_video: 512 * 1024 * 1024 }
const invalidRequest = (message: string) => ({
  status: 400,
  body: { errors: [{ message }], title: "Invalid Request", detail: "One or more parameters to your request was invalid.", type: "https://api.twitter.com/2/problems/invalid-request" }
})

/** Starts the fake on a free port of 127.0.0.1 for the scope. */
export const makeXFake = (options: XFakeOptions = {}) =>
  Effect.gen(function*() {
    // The secret holds a `-` and a `_`, as X's own do: the Basic header must carry them as they are.
    const clientId = "cG9zdGxpbmUtdGVzdDoxOmNp"
    const clientSecret = "-RoKx3x58JA8Sm9_postline-fake"
    const redirectUri = "https://postline.test/v1/oauth/callback/x"
    // The callback addresses registered with the app at X: a test server's is known once it listens.
    const redirectUris = new Set([redirectUri])
    const user = { id: "1500000000000000001", username: "alice_x", name: "Alice" }
    const requests: Array<XReceivedRequest> = []
    const tweets: Array<XFakeTweet> = [{ id: "1400000000000000001", authorId: "44196397", text: "Someone else's post" }]
    const deleted: Array<string> = []
    const uploads: Array<XFakeUpload> = []
    const canned: Array<XCanned> = []
    const counts = new Map<string, XPublicMetrics>()
    let accountMetrics = { followers_count: 0, following_count: 0, listed_count: 0, like_count: 0, media_count: 0 }
    const oauth = makeXFakeOAuth({ clientId, clientSecret, redirectUris, accessTokenSeconds: options.accessTokenSeconds ?? 7200 })
    const { authorize, grants } = oauth
    const windows = new Map<string, { remaining: number; reset: number }>()
    let nextId = 1n
    const snowflake = (base: bigint) => String(base + nextId++)
    const live = (id: string) => tweets.find((tweet) => tweet.id === id && !deleted.includes(id))


    const userJson = (fields: ReadonlyArray<string>) => ({
      ...user,
      ...(fields.includes("profile_image_url") ? { profile_image_url: "https://pbs.twimg.com/profile_images/1/alice_normal.jpg" } : {}),
      ...(fields.includes("public_metrics") ? { public_metrics: { ...accountMetrics, tweet_count: tweets.filter((tweet) => tweet.authorId === user.id && !deleted.includes(tweet.id)).length } } : {})
    })

    const createTweet = (json: Record<string, unknown>) => {
      const text = typeof json.text === "string" ? json.text : ""
      const mediaIds: ReadonlyArray<string> = (json.media as { media_ids?: Array<string> } | undefined)?.media_ids ?? []
      const inReplyTo = (json.reply as { in_reply_to_tweet_id?: string } | undefined)?.in_reply_to_tweet_id
      if (Object.keys(json).some((key) => !["text", "media", "reply"].includes(key))) return invalidRequest("Unexpected field")
      if (text === "" && mediaIds.length === 0) return invalidRequest("Post text or media is required")
      if (twitterText.parseTweet(text).weightedLength > 280) {
        return problem(403, "Forbidden", "Your Tweet text is too long. For more information on how X determines text length see https://github.com/twitter/twitter-text.")
      }
      if (tweets.some((tweet) => tweet.authorId === user.id && tweet.text === text && !deleted.includes(tweet.id))) {
        return problem(403, "Forbidden", "You are not allowed to create a Tweet with duplicate content.")
      }
      if (inReplyTo !== undefined && !live(inReplyTo)) return invalidRequest("The Tweet you are replying to has been deleted or is not visible to you.")
      const attached = mediaIds.map((id) => uploads.find((upload) => upload.id === id))
      if (attached.some((upload) => !upload || !upload.finalized || upload.pollsLeft > 0)) return invalidRequest("Your media IDs are invalid.")
      const alone = attached.filter((upload) => upload!.category !== "tweet_image").length
      if (attached.length > 4 || (alone > 0 && attached.length > 1)) return invalidRequest("Your media IDs are invalid.")
      const tweet: XFakeTweet = {
        id: snowflake(1900000000000000000n),
        authorId: user.id,
        text,
        ...(mediaIds.length > 0 ? { mediaIds } : {}),
        ...(inReplyTo !== undefined ? { inReplyToId: inReplyTo } : {})
      }
      tweets.push(tweet)
      return { status: 201, body: { data: { id: tweet.id, text, edit_history_tweet_ids: [tweet.id] } } }
    }

    const uploadJson = (upload: XFakeUpload, state?: string) => ({
      data: {
        id: upload.id,
        media_key: `${upload.category === "tweet_image" ? 3 : upload.category === "tweet_gif" ? 16 : 13}_${upload.id}`,
        size: upload.totalBytes,
        expires_after_secs: 86400,
        ...(state ? { processing_info: { state, check_after_secs: options.checkAfterSecs ?? 1, progress_percent: state === "succeeded" ? 100 : 50 } } : {})
      }
    })

    const media = async (method: string, path: string, query: URLSearchParams, raw: Buffer, headers: IncomingHttpHeaders) => {
      const json = () => JSON.parse(raw.toString() || "{}")
      if (method === "POST" && path === "/2/media/upload/initialize") {
        const { media_category: category, media_type: mediaType, total_bytes: totalBytes } = json()
        const expected = mediaType === "video/mp4" ? "amplify_video" : mediaType === "image/gif" ? "tweet_gif" : "tweet_image"
        if (!["image/jpeg", "image/png", "image/webp", "image/gif", "video/mp4"].includes(mediaType) || category !== expected) return invalidRequest("Invalid media_type or media_category")
        if (typeof totalBytes !== "number" || totalBytes > mediaLimits[category]!) return invalidRequest("total_bytes is over the limit of its media_category")
        const upload: XFakeUpload = { id: snowflake(1800000000000000000n), mediaType, category, totalBytes, chunks: [], finalized: false, pollsLeft: 0, altText: null }
        uploads.push(upload)
        return { status: 200, body: uploadJson(upload) }
      }
      const step = /^\/2\/media\/upload\/(\d+)\/(append|finalize)$/.exec(path)
      const upload = uploads.find(({ id }) => id === (step?.[1] ?? query.get("media_id") ?? json().id))
      if (!upload) return invalidRequest("Unknown media id")
      if (method === "POST" && step?.[2] === "append") {
        const form = await new Request("http://fake/", { method: "POST", headers: { "content-type": String(headers["content-type"]) }, body: raw }).formData()
        const segment = form.get("media")
        if (upload.finalized || !(segment instanceof File)) return invalidRequest("Invalid APPEND")
        if (Number(form.get("segment_index")) !== upload.chunks.length) return invalidRequest(`segment_index must be ${upload.chunks.length}`)
        upload.chunks.push(Buffer.from(await segment.arrayBuffer()))
        return { status: 200, body: { data: { expires_at: Math.floor(Date.now() / 1000) + 86400 } } }
      }
      if (method === "POST" && step?.[2] === "finalize") {
        const received = upload.chunks.reduce((sum, chunk) => sum + chunk.length, 0)
        if (received !== upload.totalBytes) return invalidRequest(`File size mismatch: ${received} of ${upload.totalBytes} bytes`)
        upload.finalized = true
        if (upload.category === "tweet_image") return { status: 200, body: uploadJson(upload) }
        upload.pollsLeft = options.processingPolls ?? 1
        return { status: 200, body: uploadJson(upload, "pending") }
      }
      if (method === "GET" && path === "/2/media/upload" && query.get("command") === "STATUS") {
        if (!upload.finalized) return invalidRequest("The media is not finalized")
        if (upload.pollsLeft > 0) upload.pollsLeft -= 1
        return { status: 200, body: uploadJson(upload, upload.pollsLeft > 0 ? "in_progress" : "succeeded") }
      }
      if (method === "POST" && path === "/2/media/metadata") {
        const text: string = json().metadata?.alt_text?.text ?? ""
        if ([...text].length > 1000) return invalidRequest("alt_text.text must be at most 1000 characters")
        upload.altText = text
        return { status: 200, body: { data: { id: upload.id, associated_metadata: { alt_text: { text } } } } }
      }
      return problem(404, "Not Found", "Not Found")
    }

    const api = async (method: string, path: string, query: URLSearchParams, raw: Buffer, headers: IncomingHttpHeaders) => {
      const needs = path.startsWith("/2/media/") ? ["media.write"] : method === "GET" ? ["tweet.read", "users.read"] : ["tweet.read", "tweet.write", "users.read"]
      const refused = authorize(headers, needs)
      if (refused) return refused
      if (path.startsWith("/2/media/")) return media(method, path, query, raw, headers)
      if (method === "GET" && path === "/2/users/me") return { status: 200, body: { data: userJson((query.get("user.fields") ?? "").split(",")) } }
      if (method === "POST" && path === "/2/tweets") return createTweet(JSON.parse(raw.toString() || "{}"))
      const tweetPath = /^\/2\/tweets\/(\d+)$/.exec(path)
      if (method === "DELETE" && tweetPath) {
        const tweet = live(tweetPath[1]!)
        if (!tweet) return problem(404, "Not Found Error", `Could not find tweet with id: [${tweetPath[1]}].`, "https://api.twitter.com/2/problems/resource-not-found")
        if (tweet.authorId !== user.id) return problem(403, "Forbidden", "You are not allowed to delete a Tweet that you did not create.")
        deleted.push(tweet.id)
        return { status: 200, body: { data: { deleted: true } } }
      }
      if (method === "GET" && path === "/2/tweets") {
        const ids = (query.get("ids") ?? "").split(",").filter((id) => id !== "")
        if (ids.length === 0 || ids.length > 100) return invalidRequest("ids must name 1 to 100 posts")
        const metrics = (query.get("tweet.fields") ?? "").split(",").includes("public_metrics")
        const found = ids.flatMap((id) => live(id) ? [live(id)!] : [])
        const missing = ids.filter((id) => !live(id))
        const none = { like_count: 0, retweet_count: 0, reply_count: 0, quote_count: 0, impression_count: 0, bookmark_count: 0 }
        return {
          status: 200,
          body: {
            ...(found.length > 0 ? { data: found.map((tweet) => ({ id: tweet.id, text: tweet.text, edit_history_tweet_ids: [tweet.id], ...(metrics ? { public_metrics: { ...none, ...counts.get(tweet.id) } } : {}) })) } : {}),
            ...(missing.length > 0 ? { errors: missing.map((id) => ({ value: id, detail: `Could not find tweet with ids: [${id}].`, title: "Not Found Error", resource_type: "tweet", parameter: "ids", resource_id: id, type: "https://api.twitter.com/2/problems/resource-not-found" })) } : {})
          }
        }
      }
      return problem(404, "Not Found", "Not Found")
    }

    // Each endpoint's window of 15 minutes, per the fake's one user.
    const rateLimited = (key: string) => {
      const limit = key === "POST /2/tweets" ? 100 : key.startsWith("DELETE") ? 50 : 900
      const now = Math.floor(Date.now() / 1000)
      const window = windows.get(key) ?? { remaining: limit, reset: now + 900 }
      if (window.reset <= now) Object.assign(window, { remaining: limit, reset: now + 900 })
      windows.set(key, window)
      if (window.remaining > 0) window.remaining -= 1
      return { "x-rate-limit-limit": String(limit), "x-rate-limit-remaining": String(window.remaining), "x-rate-limit-reset": String(window.reset) }
    }

    const url = yield* makeLocalServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", async () => {
        const raw = Buffer.concat(chunks)
        const target = new URL(request.url ?? "/", "http://fake")
        const method = request.method ?? "GET"
        requests.push({ method, path: target.pathname + target.search, headers: request.headers, body: raw.toString() })
        const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
          response.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers })
          response.end(JSON.stringify(body))
        }
        if (target.pathname === "/i/oauth2/authorize") {
          if (method === "POST") {
            const { location, status } = oauth.consent(new URLSearchParams(raw.toString()))
            response.writeHead(status, location ? { location } : {})
            return response.end()
          }
          const { html, status } = oauth.authorizePage(target.searchParams)
          response.writeHead(status, { "content-type": "text/html; charset=utf-8" })
          return response.end(`<!doctype html><html><body>${html}</body></html>`)
        }
        const next = canned.shift()
        if (next) return send(next.status, next.body ?? problem(next.status, "Canned", "Canned answer").body, next.headers)
        const form = () => new URLSearchParams(raw.toString())
        if (method === "POST" && target.pathname === "/2/oauth2/token") {
          const { body, status } = oauth.token(request.headers, form())
          return send(status, body)
        }
        if (method === "POST" && target.pathname === "/2/oauth2/revoke") {
          const { body, status } = oauth.revoke(request.headers, form())
          return send(status, body)
        }
        const limits = rateLimited(`${method} ${target.pathname.replace(/\d{6,}/g, ":id")}`)
        if (limits["x-rate-limit-remaining"] === "0") return send(429, problem(429, "Too Many Requests", "Too Many Requests").body, limits)
        const { body, status } = await api(method, target.pathname, target.searchParams, raw, request.headers)
        return send(status, body, limits)
      })
    })

    return {
      url,
      authorizeUrl: `${url}/i/oauth2/authorize`,
      clientId,
      clientSecret,
      redirectUri,
      /** Registers another callback address with the app, as its developer does in X's developer portal. */
      registerRedirectUri: (uri: string) => void redirectUris.add(uri),
      user,
      requests,
      grants,
      tweets,
      deleted,
      uploads,
      /** The next API or token call gets this answer instead (a 429, a 503, an OAuth error). */
      answerNext: (answer: XCanned) => void canned.push(answer),
      /** A grant as signing in would give it, without the browser: its access and refresh tokens. */
      grant: (scope: ReadonlyArray<string> = ["tweet.read", "tweet.write", "users.read", "media.write", "offline.access"]) => {
        const { body } = oauth.issue(oauth.newGrant(scope))
        return { accessToken: body.access_token, refreshToken: body.refresh_token ?? null }
      },
      setAccessTokenSeconds: oauth.setAccessTokenSeconds,
      setCounts: (tweetId: string, set: Partial<XPublicMetrics>) => void counts.set(tweetId, { ...counts.get(tweetId)!, ...set }),
      setAccountCounts: (set: Partial<typeof accountMetrics>) => void (accountMetrics = { ...accountMetrics, ...set })
    }
  })

export type XFake = Effect.Effect.Success<ReturnType<typeof makeXFake>>

/** What the person's browser does at X's consent page: submits its Authorize (or Cancel) form; where X sends it back. */
export const consentAtX = (authorizationUrl: string, decision: "allow" | "deny") =>
  Effect.promise(async () => {
    const html = await (await fetch(authorizationUrl)).text()
    const form = [...html.matchAll(/<form method="post" action="([^"]+)">(.*?)<\/form>/g)]
      .find(([, , inputs]) => inputs!.includes(`name="decision" value="${decision}"`))
    if (form === undefined) throw new Error(`No ${decision} form at X's page: ${html.slice(0, 300)}`)
    const fields = new URLSearchParams([...form[2]!.matchAll(/name="([^"]+)" value="([^"]*)"/g)].map(([, name, value]) => [name!, value!] as [string, string]))
    const answer = await fetch(new URL(form[1]!, authorizationUrl), { method: "POST", body: fields, redirect: "manual" })
    if (answer.status !== 302) throw new Error(`X's form answered ${answer.status}`)
    return new URL(answer.headers.get("location")!)
  })

/** This server's X settings for the fake: its app's client id and secret, its API and its sign-in page. */
export const xSettingsOf = (fake: XFake, overrides: Partial<XSettings> = {}) =>
  Layer.succeed(XSettings, XSettings.make({
    clientId: fake.clientId,
    clientSecret: Redacted.make(fake.clientSecret),
    apiUrl: fake.url,
    authorizeUrl: fake.authorizeUrl,
    ...overrides
  }))
