import type { ProviderErrorCategory } from "@postline/domain"
import { Option, Schema } from "effect"
import { fromStatus, shortMessage } from "./Errors.js"
import type { ProviderError } from "./SocialProvider.js"

// core.telegram.org/bots/api#making-requests: an unsuccessful answer is `{ok: false, error_code, description,
// parameters?}`, its ResponseParameters saying how long to wait (`retry_after`) or where a group went
// (`migrate_to_chat_id`).
const ErrorAnswer = Schema.Struct({
  ok: Schema.Literal(false),
  error_code: Schema.optional(Schema.Int),
  description: Schema.optional(Schema.String),
  parameters: Schema.optional(Schema.Struct({
    retry_after: Schema.optional(Schema.Number),
    migrate_to_chat_id: Schema.optional(Schema.Number)
  }))
})
const decodeErrorAnswer = Schema.decodeUnknownOption(Schema.parseJson(ErrorAnswer))

// Telegram says most refusals with a 400 and its words: these refuse the chat (gone, or the bot may not post there
// any more), not what was sent, so the account needs the user, as a refused token does.
const chatRefusal =
  /chat not found|not enough rights|need administrator rights|have no rights|bot is not a member|bot was kicked|CHAT_WRITE_FORBIDDEN|CHAT_ADMIN_REQUIRED/i

/** What the user does about a chat that refuses the bot. */
export const addTheBot = "Add the bot to the chat (a channel: as an administrator allowed to post messages; a group: " +
  "as a member allowed to send messages) and check the account's chatId"

/**
 * An error answer of Telegram's, by its status, its words and its parameters. A group upgraded to a supergroup
 * has a new chat id, which the account must be given (Postline cannot change stored credentials on its own): `auth`,
 * saying which. 401 (a revoked token) and 404 (a token Telegram does not know at all) refuse the token: `auth`.
 */
export const fromTelegramAnswer = (status: number, headers: Headers, text: string): ProviderError => {
  const answer = Option.getOrUndefined(decodeErrorAnswer(text))
  const description = answer?.description ?? shortMessage(text, `Telegram answered ${status}`)
  const { migrate_to_chat_id: migratedTo, retry_after: retryAfter } = answer?.parameters ?? {}
  const [category, providerMessage]: readonly [ProviderErrorCategory | undefined, string] = migratedTo !== undefined
    ? ["auth", `${description}: the group became a supergroup, whose chat id is ${migratedTo}; update the account's chatId to it`]
    : status === 401 || status === 404
    ? ["auth", `Telegram refused the bot token (${description}): give the bot's current token, from @BotFather`]
    : status === 403 || (status === 400 && chatRefusal.test(description))
    ? ["auth", `${description}. ${addTheBot}`]
    : [undefined, description]
  return fromStatus({
    provider: "telegram",
    status,
    // `retry_after` says what a Retry-After header would.
    header: (name) => name === "retry-after" && retryAfter !== undefined ? String(retryAfter) : headers.get(name),
    providerMessage,
    clientError: "invalid_content",
    ...(category ? { category } : {})
  })
}
