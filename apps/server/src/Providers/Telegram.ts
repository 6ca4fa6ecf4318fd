import { Chunk, Effect, type Redacted, Schema } from "effect"
import { defaultContentLimits } from "./Rules.js"
import { type ContentLimits, ProviderError, type Published, type SocialProvider } from "./SocialProvider.js"
import { TelegramClient } from "./TelegramClient.js"
import { TelegramMedia, telegramMediaProblems } from "./TelegramMedia.js"
import { Chat, ChatMember, Message, postingRefusal, User } from "./TelegramObjects.js"
import { lengthProblems } from "./TextLength.js"

const defaultLimits: ContentLimits = defaultContentLimits.telegram

// sendPhoto, sendVideo, sendMediaGroup: "0-1024 characters after entities parsing", in UTF-16 code units as the text.
const maxCaptionLength = 1024

// deleteMessages takes 1 to 100 ids.
const idsPerDelete = 100

const refused = (providerMessage: string) =>
  new ProviderError({ provider: "telegram", category: "auth", retryable: false, providerMessage })

/**
 * A part's answer: its id is the message holding its text, which a reply names; `reference` holds every message of
 * the part, comma-separated, when it is more than one (an album, or media and the text after them), so that all
 * are deleted. A chat with a public username links each message (t.me/<username>/<id>); others have no public link.
 */
const published = (main: Message, all: ReadonlyArray<Message>): Published => ({
  externalId: String(main.message_id),
  url: main.chat.username === undefined ? null : `https://t.me/${main.chat.username}/${main.message_id}`,
  ...(all.length > 1 ? { reference: all.map((message) => message.message_id).join(",") } : {})
})

/**
 * Telegram, through the Bot API, as a bot that posts to one channel or group (connected by its token, no OAuth).
 * Text goes as plain text (no parse_mode: nothing the user wrote is read as markup). Media are uploaded with the
 * post, one as a photo or video, several as an album, the text as their caption; a text too long for a caption
 * (over 1024) is sent right after the media, as a reply to them, so the post goes out whole and together rather
 * than being refused for a limit the user has no reason to know: it is then the message the part's id names.
 * A thread is a chain of replies. The Bot API has no idempotency key: a repeat of a part that went out unrecorded
 * is posted again. It tells nothing of a message's views or reactions to a bot: no analytics.
 */
export class Telegram extends Effect.Service<Telegram>()("Telegram", {
  effect: Effect.gen(function*() {
    const { call } = yield* TelegramClient
    const { send: sendMedia } = yield* TelegramMedia

    /** Deletes the messages; those Telegram no longer has count as deleted. */
    const deleteMessages = (botToken: Redacted.Redacted<string>, chatId: string, ids: ReadonlyArray<number>) =>
      Effect.forEach(Chunk.chunksOf(Chunk.fromIterable(ids), idsPerDelete), (chunk) =>
        call(botToken, "deleteMessages", { chat_id: chatId, message_ids: Chunk.toArray(chunk) }, Schema.Boolean).pipe(
          Effect.catchIf((error) => error.providerStatus === 400 && /message to delete not found/i.test(error.providerMessage), () => Effect.void),
          Effect.mapError((error) =>
            error.providerStatus === 400 && /can'?t be deleted|cannot be deleted/i.test(error.providerMessage)
              ? new ProviderError({
                provider: "telegram",
                category: "invalid_content",
                retryable: false,
                providerStatus: 400,
                providerMessage: `${error.providerMessage}: Telegram lets a bot delete its messages only within 48 hours ` +
                  "of sending them, unless it is an administrator of the chat allowed to delete messages: delete them " +
                  "in Telegram, or give the bot that right"
              })
              : error
          )
        ), { discard: true })

    const provider: SocialProvider<"telegram"> = {
      name: "telegram",
      defaultLimits,
      threads: "replies",
      verify: ({ botToken, chatId, name }) =>
        Effect.gen(function*() {
          const bot = yield* call(botToken, "getMe", {}, User)
          const chat = yield* call(botToken, "getChat", { chat_id: chatId }, Chat)
          if (chat.type === "private") {
            return yield* refused(`${chatId} is a private chat with a person: Postline posts to a channel or a group`)
          }
          const member = yield* call(botToken, "getChatMember", { chat_id: chat.id, user_id: bot.id }, ChatMember)
          const refusal = postingRefusal(chat, member)
          if (refusal !== undefined) return yield* refused(refusal)
          return {
            // The chat's numeric id, which renaming a channel keeps: the same chat connected again is the same account.
            networkUserId: `${bot.id}/${chat.id}`,
            handle: chat.username !== undefined ? `@${chat.username}` : chat.title ?? String(chat.id),
            displayName: name ?? chat.title ?? null,
            // A chat's photo is only reachable at a URL holding the bot's token: none is shown.
            avatarUrl: null,
            profileUrl: chat.username !== undefined ? `https://t.me/${chat.username}` : null,
            limits: defaultLimits
          }
        }),
      publish: ({ credentials: { botToken, chatId } }, post) =>
        Effect.gen(function*() {
          const parent = post.replyTo === undefined ? undefined : Number(post.replyTo.parent.externalId)
          const sendText = (replyTo: number | undefined) =>
            call(botToken, "sendMessage", {
              chat_id: chatId,
              text: post.text,
              ...(replyTo !== undefined ? { reply_parameters: { message_id: replyTo } } : {})
            }, Message)
          if (post.media.length === 0) {
            const message = yield* sendText(parent)
            return published(message, [message])
          }
          const captioned = post.text.length <= maxCaptionLength
          const sent = yield* sendMedia(botToken, chatId, post.media, {
            ...(captioned ? { caption: post.text } : {}),
            ...(parent !== undefined ? { replyTo: parent } : {})
          })
          if (captioned) return published(sent[0]!, sent)
          // The media without their text would be half a post: taken down again when the text fails, so that the
          // send may be tried again whole.
          const text = yield* sendText(sent[0]!.message_id).pipe(
            Effect.tapError(() => Effect.ignore(deleteMessages(botToken, chatId, sent.map((message) => message.message_id))))
          )
          return published(text, [...sent, text])
        }),
      remove: ({ credentials: { botToken, chatId } }, { parts }) =>
        deleteMessages(
          botToken,
          chatId,
          [...new Set(parts.flatMap((part) => (part.reference ?? part.externalId).split(",")))].map(Number)
        ),
      // Telegram counts UTF-16 code units, as JavaScript's `length` does.
      validate: (text, limits = defaultLimits) => lengthProblems(text, text.length, limits),
      validateMedia: (facts) => telegramMediaProblems(facts),
      analytics: null
    }
    return provider
  }),
  dependencies: [TelegramClient.Default, TelegramMedia.Default]
}) {}
