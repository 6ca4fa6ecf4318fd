/**
 * A FAKE Telegram Bot API (api.telegram.org): Telegram cannot be reached here, so the tests run against this node:http
 * server, which checks what the Bot API documents for the calls Postline makes:
 * - core.telegram.org/bots/api#making-requests: `/bot<token>/<method>` (methods case-insensitive), GET or POST, the
 *   parameters in the query, as JSON, urlencoded or multipart/form-data (objects JSON-serialized); the answer
 *   `{ok: true, result}` or `{ok: false, error_code, description, parameters?}` (#responseparameters: `retry_after`,
 *   `migrate_to_chat_id`). A token not shaped as one, or an unknown method, answers 404 Not Found; a token of no bot 401.
 * - #getme; #getchat (ChatFullInfo: a public chat found by its @username or id, another by its id where the bot is); #getchatmember
 *   (the bot's ChatMember: creator, administrator with can_post_messages / can_delete_messages, member, restricted, left, kicked).
 * - #sendmessage (1-4096 characters after entities parsing, counted in UTF-16 code units as core.telegram.org/api/entities
 *   says; parse_mode recorded; #replyparameters naming a message of the chat), #sendphoto and #sendvideo (caption
 *   0-1024), #sendmediagroup (2-10 #inputmediaphoto / #inputmediavideo, each file a part named by `attach://<name>`),
 *   #sending-files (uploads: photos 10 MB, other files 50 MB).
 * - #deletemessage and #deletemessages (1-100 ids; missing ones skipped, none found refused; a message sent over 48
 *   hours ago only by an administrator allowed to delete messages).
 * - Who may post: a channel's administrators allowed to post messages, a group's members unless restricted; a group
 *   upgraded to a supergroup refuses with `migrate_to_chat_id`.
 * - core.telegram.org/bots/faq (limits: about 1 message a second per chat, 20 a minute per group): flood control is
 *   Telegram's to decide, so a test says when it answers 429 with `retry_after` (`floodNext`).
 * Error descriptions are the words Telegram answers (the documentation fixes their shape, not their words). It records
 * every request, and each chat's messages.
 */
import { Effect } from "effect"
import { createHash } from "node:crypto"
import type { IncomingHttpHeaders } from "node:http"
import { makeLocalServer } from "./LocalServer.js"

export interface TelegramFakeFile { readonly field: string; readonly name: string; readonly type: string; readonly size: number; readonly sha256: string }
export interface TelegramFakeRequest {
  readonly method: string
  readonly contentType: string
  readonly parameters: Record<string, unknown>
  readonly files: ReadonlyArray<TelegramFakeFile>
}
export interface TelegramFakeMessage {
  readonly message_id: number
  date: number
  readonly kind: "text" | "photo" | "video"
  readonly text?: string
  readonly caption?: string
  readonly parseMode?: string
  readonly file?: TelegramFakeFile
  readonly replyTo?: number
  readonly mediaGroupId?: string
  deleted: boolean
}
export interface TelegramFakeChat {
  readonly id: number
  readonly type: "private" | "group" | "supergroup" | "channel"
  readonly title?: string
  readonly username?: string
  permissions?: { can_send_messages: boolean }
  /** The bot's ChatMember in it (without `user`). */
  member: { readonly status: "creator" | "administrator" | "member" | "restricted" | "left" | "kicked"; readonly [right: string]: unknown }
  /** Where a group upgraded to a supergroup went. */
  migratedTo?: number
  readonly messages: Array<TelegramFakeMessage>
}
interface Answer { readonly status: number; readonly body: unknown }
/** An answer a test asks for instead of the fake's own: of the next call (of `method`, when named); `stall` never answers. */
interface Canned { readonly method?: string; readonly answer: Answer | "stall" }

const MB = 1024 * 1024
const ok = (result: unknown): Answer => ({ status: 200, body: { ok: true, result } })
const fail = (code: number, description: string, parameters?: object): Answer => ({
  status: code,
  body: { ok: false, error_code: code, description, ...(parameters ? { parameters } : {}) }
})
const bad = (what: string) => fail(400, `Bad Request: ${what}`)
const json = (value: unknown) => typeof value === "string" ? JSON.parse(value) : value

const methods = ["getme", "getchat", "getchatmember", "sendmessage", "sendphoto", "sendvideo", "sendmediagroup", "deletemessage", "deletemessages"]

/** Reads the parameters wherever the request put them, and the uploaded files. */
const parametersOf = async (query: URLSearchParams, headers: IncomingHttpHeaders, raw: Buffer) => {
  const contentType = String(headers["content-type"] ?? "")
  const parameters: Record<string, unknown> = Object.fromEntries(query)
  const files = new Map<string, File>()
  if (contentType.startsWith("application/json")) Object.assign(parameters, JSON.parse(raw.toString() || "{}"))
  if (contentType.startsWith("application/x-www-form-urlencoded")) Object.assign(parameters, Object.fromEntries(new URLSearchParams(raw.toString())))
  if (contentType.startsWith("multipart/form-data")) {
    const form = await new Request("http://fake/", { method: "POST", headers: { "content-type": contentType }, body: raw }).formData()
    for (const [name, value] of form) typeof value === "string" ? (parameters[name] = value) : files.set(name, value)
  }
  return { contentType, parameters, files }
}

/** Starts the fake on a free port of 127.0.0.1 for the scope, with one bot, in a channel and a group. */
export const makeTelegramFake = Effect.gen(function*() {
  const bot = { id: 7000000001, username: "postline_test_bot", first_name: "Postline", token: "7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw4" }
  const channel: TelegramFakeChat = {
    id: -1001234567890, type: "channel", title: "Postline News", username: "postline_news",
    member: { status: "administrator", can_post_messages: true, can_delete_messages: false }, messages: []
  }
  const group: TelegramFakeChat = {
    id: -1009876543210, type: "supergroup", title: "Postline Team", permissions: { can_send_messages: true },
    member: { status: "member" }, messages: []
  }
  const chats: Array<TelegramFakeChat> = [channel, group]
  const requests: Array<TelegramFakeRequest> = []
  const canned: Array<Canned> = []
  let nextId = 100

  const findChat = (chatId: unknown) => {
    const text = String(chatId)
    if (text.startsWith("@")) return chats.find((chat) => chat.username?.toLowerCase() === text.slice(1).toLowerCase())
    return chats.find((chat) => String(chat.id) === text && (chat.username !== undefined || chat.member.status !== "left"))
  }
  const chatJson = ({ id, title, type, username }: TelegramFakeChat) => ({ id, type, ...(title ? { title } : {}), ...(username ? { username } : {}) })
  const where = (chat: TelegramFakeChat) => chat.type === "channel" ? "channel" : "group"

  /** Why the bot may not post in the chat, in Telegram's words; undefined when it may. */
  const postingRefusal = (chat: TelegramFakeChat): Answer | undefined => {
    const { member } = chat
    if (chat.migratedTo !== undefined) return fail(400, "Bad Request: group chat was upgraded to a supergroup chat", { migrate_to_chat_id: chat.migratedTo })
    if (member.status === "kicked") return fail(403, `Forbidden: bot was kicked from the ${where(chat)} chat`)
    if (member.status === "left") return fail(403, `Forbidden: bot is not a member of the ${where(chat)} chat`)
    if (member.status === "creator") return undefined
    if (chat.type === "channel") return member.status === "administrator" && member.can_post_messages === true ? undefined : bad("need administrator rights in the channel chat")
    const mayPost = member.status === "administrator" ||
      (member.status === "restricted" ? member.can_send_messages === true : chat.permissions?.can_send_messages !== false)
    return mayPost ? undefined : bad("not enough rights to send text messages to the chat")
  }

  const messageJson = (chat: TelegramFakeChat, message: TelegramFakeMessage) => ({
    message_id: message.message_id,
    date: message.date,
    chat: chatJson(chat),
    ...(chat.type === "channel" ? { sender_chat: chatJson(chat) } : { from: { id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username } }),
    ...(message.text !== undefined ? { text: message.text } : {}),
    ...(message.caption !== undefined ? { caption: message.caption } : {}),
    ...(message.kind === "photo" ? { photo: [{ file_id: `photo-${message.message_id}`, file_unique_id: `p${message.message_id}`, width: 1280, height: 720, file_size: message.file!.size }] } : {}),
    ...(message.kind === "video" ? { video: { file_id: `video-${message.message_id}`, file_unique_id: `v${message.message_id}`, width: 1280, height: 720, duration: 1, file_size: message.file!.size } } : {}),
    ...(message.replyTo !== undefined ? { reply_to_message: { message_id: message.replyTo, date: message.date, chat: chatJson(chat) } } : {}),
    ...(message.mediaGroupId !== undefined ? { media_group_id: message.mediaGroupId } : {})
  })

  const live = (chat: TelegramFakeChat, id: number) => chat.messages.find((message) => message.message_id === id && !message.deleted)

  /** The checks every send makes, then the messages it makes (each of `items`), answered as Telegram does. */
  const send = (chat: TelegramFakeChat, parameters: Record<string, unknown>, items: ReadonlyArray<Omit<TelegramFakeMessage, "message_id" | "date" | "deleted" | "replyTo">>) => {
    const refusal = postingRefusal(chat)
    if (refusal) return refusal
    const reply = parameters.reply_parameters === undefined ? undefined : json(parameters.reply_parameters) as { message_id?: number }
    if (reply !== undefined && (typeof reply.message_id !== "number" || !live(chat, reply.message_id))) return bad("message to be replied not found")
    const made = items.map((item): TelegramFakeMessage => ({
      ...item, message_id: nextId++, date: Math.floor(Date.now() / 1000), deleted: false, ...(reply ? { replyTo: reply.message_id! } : {})
    }))
    chat.messages.push(...made)
    const answers = made.map((message) => messageJson(chat, message))
    return ok(items.length === 1 && items[0]!.mediaGroupId === undefined ? answers[0] : answers)
  }

  const fileOf = async (field: string, file: File): Promise<TelegramFakeFile> => {
    const bytes = Buffer.from(await file.arrayBuffer())
    return { field, name: file.name, type: file.type, size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex") }
  }
  const tooBig = (kind: "photo" | "video", file: TelegramFakeFile) =>
    kind === "photo" && file.size > 10 * MB ? bad("file is too big") : file.size > 50 * MB ? fail(413, "Request Entity Too Large") : undefined
  const captionTooLong = (caption: unknown) => typeof caption === "string" && caption.length > 1024

  const api = async (method: string, parameters: Record<string, unknown>, files: Map<string, File>): Promise<Answer> => {
    if (method === "getme") return ok({ id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false })
    const chat = findChat(parameters.chat_id)
    if (parameters.chat_id === undefined || parameters.chat_id === "") return bad("chat_id is empty")
    if (!chat) return bad("chat not found")
    if (method === "getchat") return ok({ ...chatJson(chat), ...(chat.permissions ? { permissions: chat.permissions } : {}), accent_color_id: 0, max_reaction_count: 11 })
    if (method === "getchatmember") {
      if (Number(parameters.user_id) !== bot.id) return bad("PARTICIPANT_ID_INVALID")
      if (chat.type === "channel" && (chat.member.status === "left" || chat.member.status === "kicked")) return fail(403, "Forbidden: bot is not a member of the channel chat")
      return ok({ user: { id: bot.id, is_bot: true, first_name: bot.first_name, username: bot.username }, ...chat.member })
    }
    if (method === "sendmessage") {
      const text = typeof parameters.text === "string" ? parameters.text.trim() : ""
      if (text === "") return bad("message text is empty")
      if (text.length > 4096) return bad("message is too long")
      return send(chat, parameters, [{ kind: "text", text, ...(parameters.parse_mode ? { parseMode: String(parameters.parse_mode) } : {}) }])
    }
    if (method === "sendphoto" || method === "sendvideo") {
      const kind = method === "sendphoto" ? "photo" : "video"
      const upload = files.get(kind)
      if (!upload) return bad(`there is no ${kind} in the request`)
      const file = await fileOf(kind, upload)
      if (captionTooLong(parameters.caption)) return bad("message caption is too long")
      return tooBig(kind, file) ?? send(chat, parameters, [{ kind, file, ...(parameters.caption !== undefined ? { caption: String(parameters.caption) } : {}) }])
    }
    if (method === "sendmediagroup") {
      const media = json(parameters.media) as Array<{ type?: string; media?: string; caption?: string }>
      if (!Array.isArray(media) || media.length < 2 || media.length > 10) return bad("wrong number of media in the media group: it must have 2-10")
      const groupId = `group-${nextId}`
      const items: Array<Omit<TelegramFakeMessage, "message_id" | "date" | "deleted" | "replyTo">> = []
      for (const item of media) {
        if (item.type !== "photo" && item.type !== "video") return bad("wrong media type in the media group")
        const upload = item.media?.startsWith("attach://") ? files.get(item.media.slice("attach://".length)) : undefined
        if (!upload) return bad("wrong file identifier/HTTP URL specified")
        const file = await fileOf(item.media!.slice("attach://".length), upload)
        if (captionTooLong(item.caption)) return bad("message caption is too long")
        const refused = tooBig(item.type, file)
        if (refused) return refused
        items.push({ kind: item.type, file, mediaGroupId: groupId, ...(item.caption !== undefined ? { caption: item.caption } : {}) })
      }
      return send(chat, parameters, items)
    }
    // deleteMessage(s): a bot deletes what it sent within 48 hours; an administrator allowed to, whatever its age.
    const ids: Array<number> = method === "deletemessage" ? [Number(parameters.message_id)] : json(parameters.message_ids)
    if (!Array.isArray(ids) || ids.length < 1 || ids.length > 100) return bad("message identifiers must be 1 to 100")
    const found = ids.flatMap((id) => live(chat, id) ? [live(chat, id)!] : [])
    // deleteMessages skips the ids it does not find; none found is refused as deleteMessage refuses one.
    if (found.length === 0) return bad("message to delete not found")
    const mayDeleteOld = chat.member.status === "creator" || chat.member.can_delete_messages === true
    if (!mayDeleteOld && found.some((message) => message.date < Date.now() / 1000 - 48 * 3600)) return bad("message can't be deleted")
    for (const message of found) message.deleted = true
    return ok(true)
  }

  const url = yield* makeLocalServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", async () => {
      const target = new URL(request.url ?? "/", "http://fake")
      // A raw string is a body that is not Telegram's JSON (a proxy's page).
      const reply = ({ body, status }: Answer) => {
        response.writeHead(status, { "content-type": typeof body === "string" ? "text/html" : "application/json" })
        response.end(typeof body === "string" ? body : JSON.stringify(body))
      }
      const route = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(target.pathname)
      const method = route?.[2]?.toLowerCase() ?? ""
      if (!route || !/^\d+:[A-Za-z0-9_-]{30,}$/.test(route[1]!) || !methods.includes(method)) return reply(fail(404, "Not Found"))
      const { contentType, files, parameters } = await parametersOf(target.searchParams, request.headers, Buffer.concat(chunks))
      requests.push({ method: route[2]!, contentType, parameters, files: await Promise.all([...files].map(([field, file]) => fileOf(field, file))) })
      if (route[1] !== bot.token) return reply(fail(401, "Unauthorized"))
      const next = canned.findIndex((answer) => answer.method === undefined || answer.method.toLowerCase() === method)
      const [answer] = next === -1 ? [undefined] : canned.splice(next, 1).map((chosen) => chosen.answer)
      if (answer === "stall") return
      reply(answer ?? await api(method, parameters, files))
    })
  })

  return {
    url,
    bot,
    channel,
    group,
    chats,
    requests,
    /** The messages of the chat that are still there. */
    messagesOf: (chat: TelegramFakeChat) => chat.messages.filter((message) => !message.deleted),
    addChat: (chat: Omit<TelegramFakeChat, "messages">) => {
      const added: TelegramFakeChat = { ...chat, messages: [] }
      chats.push(added)
      return added
    },
    /** The next call (of `method`) is answered this way: Telegram's error body, or a raw text. */
    answerNext: (status: number, description: string, options: { readonly method?: string; readonly raw?: boolean } = {}) =>
      void canned.push({ ...(options.method ? { method: options.method } : {}), answer: options.raw ? { status, body: description } : fail(status, description) }),
    /** The next call (of `method`) meets flood control, as Telegram answers it: 429 and how many seconds to wait. */
    floodNext: (retryAfter: number, method?: string) =>
      void canned.push({ ...(method ? { method } : {}), answer: fail(429, `Too Many Requests: retry after ${retryAfter}`, { retry_after: retryAfter }) }),
    /** The next call gets no answer at all. */
    stallNext: () => void canned.push({ answer: "stall" }),
    /** Makes a message `hours` older, as if sent then. */
    age: (chat: TelegramFakeChat, messageId: number, hours: number) => {
      const message = chat.messages.find((sent) => sent.message_id === messageId)!
      message.date -= hours * 3600
    }
  }
})

export type TelegramFake = Effect.Effect.Success<typeof makeTelegramFake>
