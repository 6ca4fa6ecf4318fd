/**
 * A FAKE Discord (discord.com/api, its webhooks only): Discord cannot be reached here, so the tests run against this
 * node:http server, which checks what Discord documents for the calls Postline makes:
 * - discord.com/developers/docs/resources/webhook: Get Webhook with Token (no user in the answer), Execute Webhook
 *   (`?wait=true` answers the message, else 204; content up to 2000 characters, counted in code points as Discord's
 *   Python counts them; at least one of content or a file, else 50006), Delete Webhook Message (204; 404 Unknown
 *   Message, 10008, for one it does not have). A token that is not the webhook's answers 401 Invalid Webhook Token
 *   (50027), a webhook it does not have 404 Unknown Webhook (10015).
 * - discord.com/developers/docs/reference (Error Messages, Uploading Files): `multipart/form-data` with `files[n]` (each
 *   named so, with a filename), their `payload_json`, `attachments[n]` naming an uploaded `n` (description up to 1024
 *   characters); at most 10 files, each at most 10 MiB (413, 40005, past it); a body neither JSON nor multipart is
 *   50035 Invalid Form Body, as every refused form is, with its `errors` tree of `_errors`.
 * - discord.com/developers/docs/topics/rate-limits: `X-RateLimit-Limit/Remaining/Reset/Reset-After/Bucket` on every
 *   answer (5 requests in 2 seconds per webhook); told to (`rateLimitNext`), a 429 with `Retry-After`,
 *   `X-RateLimit-Scope` and `{message, retry_after, global}` as Discord answers it.
 * - discord.com/developers/docs/topics/opcodes-and-status-codes: the JSON error codes above.
 * It records every request (with the path's token), every message (with its files' bytes hashed) and deletion.
 */
import { Effect } from "effect"
import { createHash, randomBytes } from "node:crypto"
import type { IncomingHttpHeaders } from "node:http"
import { makeLocalServer } from "./LocalServer.js"

export interface DiscordReceivedRequest {
  readonly method: string
  /** Path and query, the token in it. */
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** The JSON body, or a multipart body's `payload_json`, parsed; null when none. */
  readonly payload: any
}
export interface DiscordFakeFile { readonly field: string; readonly filename: string; readonly contentType: string; readonly size: number; readonly sha256: string }
export interface DiscordFakeMessage {
  readonly id: string
  readonly webhookId: string
  readonly channelId: string
  readonly content: string
  readonly allowedMentions: unknown
  readonly attachments: ReadonlyArray<DiscordFakeFile & { readonly description: string | null }>
  deleted: boolean
}
export interface DiscordFakeWebhook {
  readonly id: string; readonly token: string; readonly name: string | null; readonly avatar: string | null
  readonly channelId: string; readonly guildId: string
}
export interface DiscordCanned { readonly status: number; readonly headers?: Record<string, string>; readonly body?: unknown }

const maxFileBytes = 10 * 1024 * 1024
const formError = (errors: unknown) => ({ status: 400, body: { code: 50035, errors, message: "Invalid Form Body" } })
const fieldError = (message: string, code = "BASE_TYPE_MAX_LENGTH") => ({ _errors: [{ code, message }] })

/** Starts the fake on a free port of 127.0.0.1 for the scope. `apiUrl` is what DISCORD_API_URL names. */
export const makeDiscordFake = Effect.gen(function*() {
  let nextId = 1n
  const snowflake = () => String(1_310_000_000_000_000_000n + nextId++)
  const webhooks = new Map<string, DiscordFakeWebhook>()
  const requests: Array<DiscordReceivedRequest> = []
  const messages: Array<DiscordFakeMessage> = []
  const canned: Array<DiscordCanned> = []
  const windows = new Map<string, { used: number; resetAt: number }>()

  const addWebhook = (set: Partial<Omit<DiscordFakeWebhook, "id" | "token">> = {}) => {
    const webhook: DiscordFakeWebhook = {
      id: snowflake(),
      token: randomBytes(51).toString("base64url"),
      name: "Postline news",
      avatar: "9b4a1e2f0c3d4e5f60718293a4b5c6d7",
      channelId: "1200000000000000002",
      guildId: "1100000000000000003",
      ...set
    }
    webhooks.set(webhook.id, webhook)
    return webhook
  }

  // Each webhook's window: 5 requests in 2 seconds, as Discord's headers tell it.
  const rateHeaders = (id: string): Record<string, string> => {
    const now = Date.now() / 1000
    const window = windows.get(id) ?? { used: 0, resetAt: now + 2 }
    if (window.resetAt <= now) Object.assign(window, { used: 0, resetAt: now + 2 })
    window.used += 1
    windows.set(id, window)
    return {
      "x-ratelimit-limit": "5",
      "x-ratelimit-remaining": String(Math.max(0, 5 - window.used)),
      "x-ratelimit-reset": window.resetAt.toFixed(3),
      "x-ratelimit-reset-after": (window.resetAt - now).toFixed(3),
      "x-ratelimit-bucket": createHash("sha256").update(`webhook:${id}`).digest("hex").slice(0, 32)
    }
  }

  const messageJson = (message: DiscordFakeMessage, webhook: DiscordFakeWebhook) => ({
    id: message.id,
    type: 0,
    content: message.content,
    channel_id: message.channelId,
    author: { id: webhook.id, username: webhook.name, avatar: webhook.avatar, discriminator: "0000", bot: true },
    attachments: message.attachments.map((file, index) => ({
      id: snowflake(), filename: file.filename, size: file.size, content_type: file.contentType, description: file.description ?? undefined,
      url: `https://cdn.discordapp.com/attachments/${message.channelId}/${index}/${file.filename}`
    })),
    embeds: [], mentions: [], mention_roles: [], pinned: false, mention_everyone: false, tts: false,
    timestamp: new Date().toISOString(), edited_timestamp: null, flags: 0, components: [], webhook_id: webhook.id
  })

  /** A body as Discord reads it: JSON, or multipart with `payload_json` and `files[n]`; null for any other type. */
  const readBody = async (contentType: string, raw: Buffer) => {
    if (contentType.startsWith("application/json")) return { payload: JSON.parse(raw.toString() || "null"), files: [], badField: null }
    if (!contentType.startsWith("multipart/form-data")) return null
    const form = await new Request("http://fake/", { method: "POST", headers: { "content-type": contentType }, body: raw }).formData()
    const files: Array<DiscordFakeFile> = []
    let payload: any = null
    let badField: string | null = null
    for (const [field, value] of form.entries()) {
      if (typeof value === "string") {
        if (field === "payload_json") payload = JSON.parse(value)
      } else if (!/^files\[\d+\]$/.test(field) || value.name === "") {
        badField = field
      } else {
        const bytes = Buffer.from(await value.arrayBuffer())
        files.push({ field, filename: value.name, contentType: value.type, size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") })
      }
    }
    return { payload, files, badField }
  }

  /** The message a body asks for, or Discord's refusal of it. */
  const execute = (webhook: DiscordFakeWebhook, body: Awaited<ReturnType<typeof readBody>>) => {
    if (body === null) return formError(fieldError("Invalid Content-Type", "CONTENT_TYPE_INVALID"))
    if (body.badField !== null) return formError({ [body.badField]: fieldError("Not a valid file field", "BASE_TYPE_BAD_FILE") })
    const { files } = body
    const payload = body.payload ?? {}
    const content: string = typeof payload.content === "string" ? payload.content : ""
    if ([...content].length > 2000) return formError({ content: fieldError("Must be 2000 or fewer in length.") })
    if (files.length > 10) return formError({ attachments: fieldError("Must be 10 or fewer in length.") })
    if (files.some((file) => file.size > maxFileBytes)) return { status: 413, body: { message: "Request entity too large", code: 40005 } }
    const listed: Array<{ id: number; description?: string }> = payload.attachments ?? []
    const described = new Map(listed.map((attachment) => [attachment.id, attachment.description ?? null]))
    const tooLong = listed.findIndex((attachment) => [...(attachment.description ?? "")].length > 1024)
    if (tooLong >= 0) return formError({ attachments: { [tooLong]: { description: fieldError("Must be 1024 or fewer in length.") } } })
    const unmatched = listed.findIndex((attachment) => !files.some((file) => file.field === `files[${attachment.id}]`))
    if (unmatched >= 0) return formError({ attachments: { [unmatched]: fieldError("Unknown attachment", "ATTACHMENT_NOT_FOUND") } })
    if (content.trim() === "" && files.length === 0) return { status: 400, body: { message: "Cannot send an empty message", code: 50006 } }
    const message: DiscordFakeMessage = {
      id: snowflake(),
      webhookId: webhook.id,
      channelId: webhook.channelId,
      content,
      allowedMentions: payload.allowed_mentions,
      attachments: files.map((file) => ({ ...file, description: described.get(Number(/\d+/.exec(file.field)![0])) ?? null })),
      deleted: false
    }
    messages.push(message)
    return { status: 200, body: messageJson(message, webhook) }
  }

  const answer = (method: string, target: URL, body: Awaited<ReturnType<typeof readBody>>) => {
    const route = /^\/api(?:\/v\d+)?\/webhooks\/(\d+)\/([^/]+)(?:\/messages\/(\d+))?$/.exec(target.pathname)
    if (!route) return { status: 404, body: { message: "404: Not Found", code: 0 } }
    const [, id, token, messageId] = route
    const webhook = webhooks.get(id!)
    if (!webhook) return { status: 404, body: { message: "Unknown Webhook", code: 10015 } }
    if (webhook.token !== token) return { status: 401, body: { message: "Invalid Webhook Token", code: 50027 } }
    if (method === "GET" && messageId === undefined) {
      const { avatar, channelId, guildId, name } = webhook
      return { status: 200, body: { application_id: null, avatar, channel_id: channelId, guild_id: guildId, id, name, type: 1, token } }
    }
    if (method === "POST" && messageId === undefined) {
      const executed = execute(webhook, body)
      const wait = ["true", "True", "1"].includes(target.searchParams.get("wait") ?? "")
      return executed.status === 200 && !wait ? { status: 204, body: undefined } : executed
    }
    if (method === "DELETE" && messageId !== undefined) {
      const message = messages.find((found) => found.id === messageId && found.webhookId === id && !found.deleted)
      if (!message) return { status: 404, body: { message: "Unknown Message", code: 10008 } }
      message.deleted = true
      return { status: 204, body: undefined }
    }
    return { status: 405, body: { message: "405: Method Not Allowed", code: 0 } }
  }

  const url = yield* makeLocalServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", async () => {
      const raw = Buffer.concat(chunks)
      const target = new URL(request.url ?? "/", "http://fake")
      const method = request.method ?? "GET"
      const body = await readBody(String(request.headers["content-type"] ?? ""), raw)
      requests.push({ method, path: target.pathname + target.search, headers: request.headers, payload: body?.payload ?? null })
      const limits = rateHeaders(/\/webhooks\/(\d+)/.exec(target.pathname)?.[1] ?? "none")
      const next = canned.shift()
      const answered = next ?? answer(method, target, body)
      response.writeHead(answered.status, {
        ...limits,
        ...("headers" in answered ? answered.headers : {}),
        ...(answered.body === undefined ? {} : { "content-type": "application/json" })
      })
      response.end(answered.body === undefined ? undefined : JSON.stringify(answered.body))
    })
  })

  const webhook = addWebhook()
  return {
    url,
    /** What DISCORD_API_URL is set to. */
    apiUrl: `${url}/api`,
    /** The webhook every test may use; `addWebhook` makes others. */
    webhook,
    /** The URL Discord's Copy Webhook URL gives for a webhook. */
    webhookUrl: (hook: DiscordFakeWebhook = webhook, host = "discord.com", version = "/v10") =>
      `https://${host}/api${version}/webhooks/${hook.id}/${hook.token}`,
    addWebhook,
    /** As a server's admin does in Discord: the webhook is gone, and its URL answers Unknown Webhook. */
    deleteWebhook: (hook: DiscordFakeWebhook) => void webhooks.delete(hook.id),
    requests,
    messages,
    /** The next call gets this answer instead (a 503). */
    answerNext: (next: DiscordCanned) => void canned.push(next),
    /** The next call is rate limited, as Discord answers it: its headers and body. */
    rateLimitNext: (retryAfter: number, scope: "user" | "shared" | "global" = "shared") =>
      void canned.push({
        status: 429,
        headers: {
          "retry-after": String(Math.ceil(retryAfter)),
          "x-ratelimit-scope": scope,
          ...(scope === "global" ? { "x-ratelimit-global": "true" } : { "x-ratelimit-remaining": "0", "x-ratelimit-reset-after": retryAfter.toFixed(3) })
        },
        body: { message: scope === "shared" ? "The resource is being rate limited." : "You are being rate limited.", retry_after: retryAfter, global: scope === "global" }
      })
  }
})

export type DiscordFake = Effect.Effect.Success<typeof makeDiscordFake>
