import { Schema } from "effect"
import { addTheBot } from "./TelegramErrors.js"

// The parts of the Bot API's objects that Postline reads (core.telegram.org/bots/api#available-types).

/** `User`, as getMe answers the bot itself. */
export const User = Schema.Struct({ id: Schema.Number, username: Schema.optional(Schema.String) })

/** `ChatFullInfo`, as getChat answers it; `permissions` are a group's defaults for its members. */
export const Chat = Schema.Struct({
  id: Schema.Number,
  type: Schema.Literal("private", "group", "supergroup", "channel"),
  title: Schema.optional(Schema.String),
  username: Schema.optional(Schema.String),
  permissions: Schema.optional(Schema.Struct({ can_send_messages: Schema.optional(Schema.Boolean) }))
})
export type Chat = typeof Chat.Type

/** `ChatMember`, one of its kinds by `status`, with the rights that matter for posting. */
export const ChatMember = Schema.Struct({
  status: Schema.Literal("creator", "administrator", "member", "restricted", "left", "kicked"),
  /** An administrator's, in a channel. */
  can_post_messages: Schema.optional(Schema.Boolean),
  /** A restricted member's. */
  can_send_messages: Schema.optional(Schema.Boolean),
  is_member: Schema.optional(Schema.Boolean)
})
export type ChatMember = typeof ChatMember.Type

/** `Message`, as a send answers it: its id, and its chat's public username if it has one (for its link). */
export const Message = Schema.Struct({
  message_id: Schema.Int,
  chat: Schema.Struct({ id: Schema.Number, username: Schema.optional(Schema.String) })
})
export type Message = typeof Message.Type

/**
 * Why the bot could not post in the chat, as its membership says; undefined when it can. A channel takes posts from
 * its administrators allowed to post messages (a bot cannot be a channel's plain member); a group from its
 * members, unless the group's permissions or the member's restrictions forbid sending messages.
 */
export const postingRefusal = (chat: Chat, member: ChatMember): string | undefined => {
  const where = chat.type === "channel" ? "channel" : "group"
  if (member.status === "left" || member.status === "kicked") return `The bot is not in the ${where}. ${addTheBot}`
  if (member.status === "creator") return undefined
  if (chat.type === "channel") {
    return member.status === "administrator" && member.can_post_messages === true
      ? undefined
      : "The bot is not an administrator of the channel allowed to post messages: make it one, with the right to post messages"
  }
  if (member.status === "administrator") return undefined
  const mayPost = member.status === "restricted"
    ? member.is_member !== false && member.can_send_messages === true
    : chat.permissions?.can_send_messages !== false
  return mayPost ? undefined : "The bot may not send messages in the group: allow it to (or make it an administrator)"
}
