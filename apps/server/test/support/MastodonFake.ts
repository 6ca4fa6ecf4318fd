/**
 * A FAKE Mastodon server: no Mastodon server can be installed or reached here, so the tests run against
 * this small node:http server, which follows Mastodon's documented API (docs.joinmastodon.org) for the
 * calls Postline makes: snake_case bodies, `{"error": "..."}` on failure, 401 for a bad token, 422 for a
 * text over the limit, and an `Idempotency-Key` that answers a repeated publish with the same status.
 * Media: `/api/v2/instance` tells its media limits; `POST /api/v2/media` (multipart) answers 202 and
 * processes in the background, `GET /api/v1/media/:id` answering 206 until it is done; a status may name
 * only processed media, at most `max_media_attachments` of them. Analytics: `GET /api/v1/statuses?id[]=`
 * (Mastodon 4.3) answers the statuses it has of those asked, in order, with the counts a test sets
 * (`setCounts`), and `verify_credentials` the account's counts (`setAccountCounts`). Threads and deletion
 * (docs.joinmastodon.org/methods/statuses: "Post a new status", "Delete a status"): `in_reply_to_id` must name a
 * status it has (else 404), and `DELETE /api/v1/statuses/:id` deletes one of the account's statuses, answering
 * it, and 404 for one it does not have or has deleted. It records every request,
 * every status it created (with its media ids) and every upload (with its description), so tests can assert them.
 * Signing in (registering an app, authorizing, tokens, revoking) is MastodonOAuthFake.ts; its tokens work as `token` does.
 */
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { type FakeApp, makeMastodonOAuth } from "./MastodonOAuthFake.js"

export interface ReceivedRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

export interface FakeStatus {
  readonly id: string
  readonly text: string
  readonly idempotencyKey: string | undefined
  /** The attachments it names, in order; absent when none (as before media, for tests that compare statuses whole). */
  readonly mediaIds?: ReadonlyArray<string>
  /** The status it replies to; absent when none. */
  readonly inReplyToId?: string
}

export interface FakeMedia {
  readonly id: string
  readonly description: string | null
  readonly fileName: string
  readonly contentType: string
  readonly size: number
  readonly sha256: string
  processed: boolean
  /** Polls still to answer 206 (processing) before the one that finds it done. */
  pollsBeforeDone: number
}

/** The instance's `configuration.media_attachments`, as /api/v2/instance tells it. */
export interface FakeMediaConfiguration {
  readonly supported_mime_types: ReadonlyArray<string>
  readonly image_size_limit: number
  readonly image_matrix_limit: number
  readonly video_size_limit: number
  readonly video_frame_rate_limit: number
  readonly video_matrix_limit: number
  readonly description_limit: number
}

export interface CannedAnswer {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: unknown
}

export interface MastodonFake {
  readonly url: string
  /** The one valid access token. */
  readonly token: string
  readonly requests: ReadonlyArray<ReceivedRequest>
  readonly statuses: ReadonlyArray<FakeStatus>
  /** The ids of the statuses deleted, in the order they were. */
  readonly deleted: ReadonlyArray<string>
  readonly media: ReadonlyArray<FakeMedia>
  /** The next request gets this answer instead of the API's (a 429, a 503, ...). */
  readonly answerNext: (answer: CannedAnswer) => void
  /** A status posted with this text gets no answer, ever: the instance hangs on it (and posts nothing). */
  readonly neverAnswerStatusWithText: (text: string) => void
  /** A status posted with this text gets this answer instead of the API's; other requests are answered as before. */
  readonly answerStatusWithText: (text: string, answer: CannedAnswer) => void
  /** The next request waits for the answered function to be called before it is answered (a slow instance). */
  readonly holdNext: () => () => void
  /** The user revokes the token at the instance: from now on it gets 401. */
  readonly revokeToken: () => void
  /** What the status's counts read from now on (each 0 until set). */
  readonly setCounts: (statusId: string, counts: Partial<StatusCounts>) => void
  readonly setAccountCounts: (counts: Partial<AccountCounts>) => void
  /** The apps registered on it (MastodonOAuthFake.ts). */
  readonly apps: ReadonlyArray<FakeApp>
  /** The tokens issued by signing in, and whether each was revoked. */
  readonly issuedTokens: () => ReadonlyArray<{ readonly accessToken: string; readonly revoked: boolean }>
}

export interface StatusCounts {
  readonly favourites_count: number
  readonly reblogs_count: number
  readonly replies_count: number
  readonly quotes_count: number
}

export interface AccountCounts {
  readonly followers_count: number
  readonly following_count: number
}

const domain = "mastodon.test"

// Mastodon counts a URL as 23 characters and text in grapheme clusters; the fake does the same, simply.
const countable = (text: string) =>
  [...new Intl.Segmenter("en", { granularity: "grapheme" }).segment(text.replace(/https?:\/\/\S+/g, "x".repeat(23)))].length

// Mastodon 4.3's own configuration (MediaAttachment's constants), with the types of its default build.
const defaultMediaConfiguration: FakeMediaConfiguration = {
  supported_mime_types: [
    "image/jpeg", "image/png", "image/gif", "image/heic", "image/heif", "image/webp", "image/avif",
    "video/webm", "video/mp4", "video/quicktime", "video/ogg", "audio/wave", "audio/wav", "audio/x-wav",
    "audio/x-pn-wave", "audio/vnd.wave", "audio/ogg", "audio/vorbis", "audio/mpeg", "audio/mp3", "audio/webm",
    "audio/flac", "audio/aac", "audio/m4a", "audio/x-m4a", "audio/mp4", "audio/3gpp", "video/x-ms-asf"
  ],
  image_size_limit: 16 * 1024 * 1024,
  image_matrix_limit: 33_177_600,
  video_size_limit: 99 * 1024 * 1024,
  video_frame_rate_limit: 120,
  video_matrix_limit: 8_294_400,
  description_limit: 1500
}

export interface MastodonFakeOptions {
  readonly maxCharacters?: number
  readonly maxMediaAttachments?: number
  readonly mediaConfiguration?: Partial<FakeMediaConfiguration>
  /** How many polls of an upload answer 206 (still processing) before one answers 200: 1 by default; Infinity, never. */
  readonly processingPolls?: number
  /** As Mastodon does: images processed during the upload (200, with a URL), only videos in the background (202). */
  readonly processImagesAtOnce?: boolean
}

/** Starts the fake on a free port of 127.0.0.1 for the scope. */
export const makeMastodonFake = (options: MastodonFakeOptions = {}) =>
  Effect.gen(function*() {
    const maxCharacters = options.maxCharacters ?? 500
    const maxMediaAttachments = options.maxMediaAttachments ?? 4
    const mediaConfiguration = { ...defaultMediaConfiguration, ...options.mediaConfiguration }
    const token = "fake-token-0123456789"
    const oauth = makeMastodonOAuth()
    const requests: Array<ReceivedRequest> = []
    const statuses: Array<FakeStatus> = []
    const deleted: Array<string> = []
    const live = (id: string) => statuses.find((status) => status.id === id && !deleted.includes(id))
    const media: Array<FakeMedia> = []
    const canned: Array<CannedAnswer> = []
    const cannedStatuses = new Map<string, CannedAnswer>()
    const hanging = new Set<string>()
    const holds: Array<Promise<void>> = []
    let url = ""
    let revoked = false
    const counts = new Map<string, StatusCounts>()
    const noCounts: StatusCounts = { favourites_count: 0, reblogs_count: 0, replies_count: 0, quotes_count: 0 }
    let accountCounts: AccountCounts = { followers_count: 0, following_count: 0 }

    const account = () => ({
      id: "109000000000000001",
      username: "alice",
      acct: "alice",
      display_name: "Alice",
      locked: false,
      bot: false,
      created_at: "2026-01-01T00:00:00.000Z",
      note: "",
      url: `${url}/@alice`,
      avatar: `${url}/system/accounts/avatars/alice.png`,
      avatar_static: `${url}/system/accounts/avatars/alice.png`,
      ...accountCounts,
      statuses_count: statuses.length
    })

    const statusJson = (status: FakeStatus) => ({
      id: status.id,
      created_at: new Date().toISOString(),
      visibility: "public",
      uri: `${url}/users/alice/statuses/${status.id}`,
      url: `${url}/@alice/${status.id}`,
      content: `<p>${status.text}</p>`,
      account: account(),
      ...(counts.get(status.id) ?? noCounts)
    })

    // `url` is null until the file is processed.
    const mediaJson = (medium: FakeMedia) => ({
      id: medium.id,
      type: medium.contentType.startsWith("video/") ? "video" : "image",
      url: medium.processed ? `${url}/system/media_attachments/files/${medium.id}/original/${medium.fileName}` : null,
      preview_url: medium.processed ? `${url}/system/media_attachments/files/${medium.id}/small/${medium.fileName}` : null,
      remote_url: null,
      description: medium.description,
      blurhash: null
    })

    /** Multipart bodies as the platform's own Request parses them. */
    const formOf = (headers: IncomingHttpHeaders, raw: Buffer) =>
      new Request("http://fake/", { method: "POST", headers: { "content-type": String(headers["content-type"]) }, body: raw })
        .formData()

    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", async () => {
        const raw = Buffer.concat(chunks)
        const body = raw.toString("utf8")
        const path = request.url ?? "/"
        requests.push({ method: request.method ?? "", path, headers: request.headers, body })
        const hold = holds.shift()
        if (hold) await hold
        const send = (status: number, json: unknown, headers: Record<string, string> = {}) => {
          response.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers })
          response.end(JSON.stringify(json))
        }
        const next = canned.shift()
        if (next) return send(next.status, next.body ?? { error: "Canned answer" }, next.headers)
        const signIn = oauth.answer(request.method ?? "", path, request.headers, body)
        if (signIn !== undefined) {
          if (signIn.json !== undefined) return send(signIn.status, signIn.json, signIn.headers)
          response.writeHead(signIn.status, { "content-type": "text/html; charset=utf-8", ...signIn.headers })
          return response.end(signIn.html ?? "")
        }
        const bearer = String(request.headers.authorization ?? "").replace(/^Bearer /, "")
        const authorized = !revoked && (bearer === token || oauth.tokenWorks(bearer))
        const unauthorized = () =>
          send(401, { error: "The access token is invalid" }, {
            "www-authenticate": 'Bearer realm="Doorkeeper", error="invalid_token", error_description="The access token is invalid"'
          })

        if (request.method === "GET" && path === "/api/v2/instance") {
          return send(200, {
            domain,
            title: "Fake Mastodon",
            version: "4.3.0",
            configuration: {
              statuses: { max_characters: maxCharacters, max_media_attachments: maxMediaAttachments, characters_reserved_per_url: 23 },
              media_attachments: mediaConfiguration
            }
          })
        }
        if (request.method === "GET" && path === "/api/v1/accounts/verify_credentials") {
          return authorized ? send(200, account()) : unauthorized()
        }
        if (request.method === "POST" && path === "/api/v2/media") {
          if (!authorized) return unauthorized()
          const form = await formOf(request.headers, raw).catch(() => undefined)
          const file = form?.get("file")
          if (!(file instanceof File)) return send(422, { error: "Validation failed: File can't be blank" })
          if (!mediaConfiguration.supported_mime_types.includes(file.type)) {
            return send(422, { error: "Validation failed: File content type is invalid" })
          }
          const limit = file.type.startsWith("video/") ? mediaConfiguration.video_size_limit : mediaConfiguration.image_size_limit
          if (file.size > limit) return send(422, { error: `Validation failed: File file size must be less than ${limit} Bytes` })
          const description = form?.get("description")
          if (typeof description === "string" && [...description].length > mediaConfiguration.description_limit) {
            return send(422, { error: `Validation failed: Description is too long (maximum is ${mediaConfiguration.description_limit} characters)` })
          }
          const bytes = Buffer.from(await file.arrayBuffer())
          const atOnce = options.processImagesAtOnce === true && file.type.startsWith("image/")
          const medium: FakeMedia = {
            id: String(111000000000000000n + BigInt(media.length + 1)),
            description: typeof description === "string" ? description : null,
            fileName: file.name,
            contentType: file.type,
            size: file.size,
            sha256: createHash("sha256").update(bytes).digest("hex"),
            processed: atOnce,
            pollsBeforeDone: options.processingPolls ?? 1
          }
          media.push(medium)
          return send(atOnce ? 200 : 202, mediaJson(medium))
        }
        const mediaPath = /^\/api\/v1\/media\/([^/?]+)$/.exec(path)
        if (request.method === "GET" && mediaPath) {
          if (!authorized) return unauthorized()
          const medium = media.find(({ id }) => id === mediaPath[1])
          if (!medium) return send(404, { error: "Record not found" })
          if (!medium.processed && medium.pollsBeforeDone > 0) {
            medium.pollsBeforeDone -= 1
            return send(206, mediaJson(medium))
          }
          medium.processed = true
          return send(200, mediaJson(medium))
        }
        if (request.method === "GET" && path.startsWith("/api/v1/statuses?")) {
          if (!authorized) return unauthorized()
          const ids = new URLSearchParams(path.slice(path.indexOf("?") + 1)).getAll("id[]")
          if (ids.length > 20) return send(422, { error: "Too many ids requested" })
          return send(200, ids.flatMap((id) => statuses.filter((status) => status.id === id).map(statusJson)))
        }
        const statusPath = /^\/api\/v1\/statuses\/([^/?]+)$/.exec(path)
        if (request.method === "DELETE" && statusPath) {
          if (!authorized) return unauthorized()
          const status = live(statusPath[1]!)
          if (!status) return send(404, { error: "Record not found" })
          deleted.push(status.id)
          return send(200, { ...statusJson(status), text: status.text })
        }
        if (request.method === "POST" && path === "/api/v1/statuses") {
          if (!authorized) return unauthorized()
          if (hanging.delete(String(JSON.parse(body || "{}").status))) return
          const cannedStatus = cannedStatuses.get(String(JSON.parse(body || "{}").status))
          if (cannedStatus) return send(cannedStatus.status, cannedStatus.body ?? { error: "Canned answer" }, cannedStatus.headers)
          const json = JSON.parse(body || "{}")
          const text = String(json.status ?? "")
          const mediaIds: ReadonlyArray<string> = json.media_ids ?? []
          const idempotencyKey = request.headers["idempotency-key"] as string | undefined
          const earlier = idempotencyKey === undefined
            ? undefined
            : statuses.find((status) => status.idempotencyKey === idempotencyKey)
          if (earlier) return send(200, statusJson(earlier))
          const inReplyToId = json.in_reply_to_id === undefined || json.in_reply_to_id === null ? undefined : String(json.in_reply_to_id)
          if (inReplyToId !== undefined && !live(inReplyToId)) return send(404, { error: "Record not found" })
          if (text.trim() === "" && mediaIds.length === 0) return send(422, { error: "Validation failed: Text can't be blank" })
          if (countable(text) > maxCharacters) {
            return send(422, { error: `Validation failed: Text character limit of ${maxCharacters} exceeded` })
          }
          if (mediaIds.length > maxMediaAttachments) {
            return send(422, { error: `Cannot attach more than ${maxMediaAttachments} files` })
          }
          const attached = mediaIds.map((id) => media.find((medium) => medium.id === id))
          if (attached.some((medium) => medium === undefined)) return send(422, { error: "Validation failed: Media attachments are invalid" })
          if (attached.some((medium) => !medium!.processed)) {
            return send(422, { error: "Cannot attach files that have not finished processing. Try again in a moment!" })
          }
          const status = {
            id: String(110000000000000000n + BigInt(statuses.length + 1)),
            text,
            idempotencyKey,
            ...(mediaIds.length > 0 ? { mediaIds } : {}),
            ...(inReplyToId !== undefined ? { inReplyToId } : {})
          }
          statuses.push(status)
          return send(200, statusJson(status))
        }
        return send(404, { error: "Record not found" })
      })
    })

    yield* Effect.acquireRelease(
      Effect.async<void>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      }),
      () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const fake: MastodonFake = {
      url,
      token,
      requests,
      statuses,
      deleted,
      media,
      answerNext: (answer) => void canned.push(answer),
      answerStatusWithText: (text, answer) => void cannedStatuses.set(text, answer),
      neverAnswerStatusWithText: (text) => void hanging.add(text),
      holdNext: () => {
        let release = () => {}
        holds.push(new Promise<void>((resolve) => (release = resolve)))
        return release
      },
      revokeToken: () => void (revoked = true),
      setCounts: (statusId, set) => void counts.set(statusId, { ...(counts.get(statusId) ?? noCounts), ...set }),
      setAccountCounts: (set) => void (accountCounts = { ...accountCounts, ...set }),
      apps: oauth.apps,
      issuedTokens: oauth.issuedTokens
    }
    return fake
  })

export { consentAtMastodon } from "./MastodonOAuthFake.js"
