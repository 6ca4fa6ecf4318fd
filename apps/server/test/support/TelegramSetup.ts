import { ConfigProvider, Context, Effect, Layer, Redacted } from "effect"
import { Outbound } from "../../src/Outbound/Outbound.js"
import type { PublishMedia } from "../../src/Providers/SocialProvider.js"
import { Telegram } from "../../src/Providers/Telegram.js"
import { makeTelegramFake, type TelegramFake } from "./TelegramFake.js"

// The Telegram adapter's tests' common ground: the adapter built against the fake, an account of its channel.

/** The Telegram adapter against the fake, allowed to reach this machine (or not), with the outbound client's timeout. */
export const telegramAgainst = (fake: TelegramFake, options: { readonly allowPrivate?: boolean; readonly totalTimeoutMillis?: number } = {}) =>
  Layer.build(Telegram.Default.pipe(
    Layer.provide(Outbound.Default({ allowPrivate: options.allowPrivate ?? true, ...(options.totalTimeoutMillis ? { totalTimeoutMillis: options.totalTimeoutMillis } : {}) })),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["TELEGRAM_API_URL", fake.url]]))))
  )).pipe(Effect.map(Context.get(Telegram)))

/** A fake Telegram, the adapter pointed at it, and an account: its bot in its public channel. */
export const setup = Effect.gen(function*() {
  const fake = yield* makeTelegramFake
  const credentials = { provider: "telegram" as const, botToken: Redacted.make(fake.bot.token), chatId: "@postline_news" }
  return { fake, telegram: yield* telegramAgainst(fake), account: { id: "account-1", credentials } }
})

export type Setup = Effect.Effect.Success<typeof setup>
/** The same account, in the fake's group (no public username) instead. */
export const inGroup = ({ account, fake }: Setup) => ({ ...account, credentials: { ...account.credentials, chatId: String(fake.group.id) } })

/** A part as Publishing/Send.ts asks for it; a reply to `parentId` when given. */
export const post = (text: string, media: ReadonlyArray<PublishMedia> = [], parentId?: string) => ({
  postId: "post-1",
  idempotencyKey: crypto.randomUUID(),
  text,
  media,
  ...(parentId ? { replyTo: { root: { externalId: parentId, reference: null }, parent: { externalId: parentId, reference: null } } } : {})
})

/** The Bot API methods called, in order. */
export const methods = (fake: TelegramFake) => fake.requests.map(({ method }) => method)
export const MB = 1024 * 1024
