/**
 * A FAKE Mastodon server: no Mastodon server can be installed or reached here, so the tests run against
 * this small node:http server, which follows Mastodon's documented API (docs.joinmastodon.org) for the
 * calls Postline makes: snake_case bodies, `{"error": "..."}` on failure, 401 for a bad token, 422 for a
 * text over the limit, and an `Idempotency-Key` that answers a repeated publish with the same status. It
 * records every request and every status it created, so tests can count publishes.
 */
import { Effect } from "effect"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"

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
  /** The next request gets this answer instead of the API's (a 429, a 503, ...). */
  readonly answerNext: (answer: CannedAnswer) => void
  /** The user revokes the token at the instance: from now on it gets 401. */
  readonly revokeToken: () => void
}

const domain = "mastodon.test"

// Mastodon counts a URL as 23 characters and text in grapheme clusters; the fake does the same, simply.
const countable = (text: string) =>
  [...new Intl.Segmenter("en", { granularity: "grapheme" }).segment(text.replace(/https?:\/\/\S+/g, "x".repeat(23)))].length

/** Starts the fake on a free port of 127.0.0.1 for the scope. */
export const makeMastodonFake = (options: { readonly maxCharacters?: number } = {}) =>
  Effect.gen(function*() {
    const maxCharacters = options.maxCharacters ?? 500
    const token = "fake-token-0123456789"
    const requests: Array<ReceivedRequest> = []
    const statuses: Array<FakeStatus> = []
    const canned: Array<CannedAnswer> = []
    let url = ""
    let revoked = false

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
      followers_count: 0,
      following_count: 0,
      statuses_count: statuses.length
    })

    const statusJson = (status: FakeStatus) => ({
      id: status.id,
      created_at: new Date().toISOString(),
      visibility: "public",
      uri: `${url}/users/alice/statuses/${status.id}`,
      url: `${url}/@alice/${status.id}`,
      content: `<p>${status.text}</p>`,
      account: account()
    })

    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8")
        const path = request.url ?? "/"
        requests.push({ method: request.method ?? "", path, headers: request.headers, body })
        const send = (status: number, json: unknown, headers: Record<string, string> = {}) => {
          response.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers })
          response.end(JSON.stringify(json))
        }
        const next = canned.shift()
        if (next) return send(next.status, next.body ?? { error: "Canned answer" }, next.headers)
        const authorized = !revoked && request.headers.authorization === `Bearer ${token}`
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
              statuses: { max_characters: maxCharacters, max_media_attachments: 4, characters_reserved_per_url: 23 }
            }
          })
        }
        if (request.method === "GET" && path === "/api/v1/accounts/verify_credentials") {
          return authorized ? send(200, account()) : unauthorized()
        }
        if (request.method === "POST" && path === "/api/v1/statuses") {
          if (!authorized) return unauthorized()
          const text = String(JSON.parse(body || "{}").status ?? "")
          const idempotencyKey = request.headers["idempotency-key"] as string | undefined
          const earlier = idempotencyKey === undefined
            ? undefined
            : statuses.find((status) => status.idempotencyKey === idempotencyKey)
          if (earlier) return send(200, statusJson(earlier))
          if (text.trim() === "") return send(422, { error: "Validation failed: Text can't be blank" })
          if (countable(text) > maxCharacters) {
            return send(422, { error: `Validation failed: Text character limit of ${maxCharacters} exceeded` })
          }
          const status = { id: String(110000000000000000n + BigInt(statuses.length + 1)), text, idempotencyKey }
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
      answerNext: (answer) => void canned.push(answer),
      revokeToken: () => void (revoked = true)
    }
    return fake
  })
