import { Effect, Schema } from "effect"
import { DiscordClient, type DiscordWebhook, webhookOf } from "./DiscordClient.js"
import { discordMediaProblems, messageBody } from "./DiscordMessage.js"
import { defaultContentLimits } from "./Rules.js"
import type { ContentLimits, SocialProvider } from "./SocialProvider.js"
import { lengthProblems } from "./TextLength.js"

// The parts of Discord's answers that Postline reads (docs/resources/webhook#webhook-object, Get Webhook with Token;
// docs/resources/message#message-object). A message carries no guild id: its link takes the webhook's.
const Webhook = Schema.Struct({
  id: Schema.String,
  guild_id: Schema.optional(Schema.NullOr(Schema.String)),
  channel_id: Schema.NullOr(Schema.String),
  name: Schema.NullOr(Schema.String),
  avatar: Schema.NullOr(Schema.String)
})

const Message = Schema.Struct({ id: Schema.String, channel_id: Schema.String })

const defaultLimits: ContentLimits = defaultContentLimits.discord

// Where a member of the server opens the channel, or a message of it.
const channelUrl = (guildId: string | null | undefined, channelId: string | null) =>
  guildId && channelId ? `https://discord.com/channels/${guildId}/${channelId}` : null

/**
 * A Discord channel, through the webhook its server made for it (no bot, no sign-in: the URL's token is the
 * credential). Each part of a post is one message (`?wait=true`, so that Discord answers it and its id is known);
 * a webhook cannot reply to a message, so a thread's later parts and a first comment are the messages that follow
 * it in the channel, in order, not linked to it. Discord has no idempotency key for a webhook: a repeat after an
 * unanswered attempt may post twice. Its rate limits are in `Budgets.ts`; webhooks have no analytics.
 */
export class Discord extends Effect.Service<Discord>()("Discord", {
  effect: Effect.gen(function*() {
    const { call } = yield* DiscordClient

    // A webhook's server never changes: read once per process (at verify, else before its first message), so that a
    // message's link can name it, and before anything is sent, so that a failure to read it leaves nothing posted.
    const guilds = new Map<string, string | null>()
    const read = (webhook: DiscordWebhook) =>
      Effect.tap(
        call(webhook, { name: "Get Webhook with Token" }, Webhook),
        (found) => Effect.sync(() => guilds.set(webhook.id, found.guild_id ?? null))
      )
    const guildOf = (webhook: DiscordWebhook) =>
      guilds.has(webhook.id) ? Effect.succeed(guilds.get(webhook.id)!) : Effect.map(read(webhook), (found) => found.guild_id ?? null)

    const provider: SocialProvider<"discord"> = {
      name: "discord",
      defaultLimits,
      threads: "replies",
      verify: (credentials) =>
        Effect.map(read(webhookOf(credentials)), (webhook) => ({
          networkUserId: webhook.id,
          handle: webhook.name ?? `#${webhook.channel_id ?? webhook.id}`,
          displayName: credentials.name ?? webhook.name,
          avatarUrl: webhook.avatar === null ? null : `https://cdn.discordapp.com/avatars/${webhook.id}/${webhook.avatar}.png`,
          profileUrl: channelUrl(webhook.guild_id, webhook.channel_id),
          limits: defaultLimits
        })),
      // `replyTo` is not sent: the part goes after the one before, in the same channel.
      publish: (account, post) =>
        Effect.gen(function*() {
          const webhook = webhookOf(account.credentials)
          const guildId = yield* guildOf(webhook)
          const body = yield* messageBody(post)
          const message = yield* call(webhook, { method: "POST", path: "?wait=true", name: "Execute Webhook", ...body }, Message)
          const channel = channelUrl(guildId, message.channel_id)
          return { externalId: message.id, url: channel === null ? null : `${channel}/${message.id}` }
        }).pipe(Effect.scoped),
      // A message Discord no longer has (404 Unknown Message) was taken down already; a webhook it no longer has is `auth`.
      remove: (account, { parts }) => {
        const webhook = webhookOf(account.credentials)
        return Effect.forEach(parts, (part) =>
          call(webhook, {
            method: "DELETE",
            path: `/messages/${encodeURIComponent(part.externalId)}`,
            name: "Delete Webhook Message"
          }, Schema.Unknown).pipe(
            Effect.catchIf((error) => error.providerStatus === 404 && error.category !== "auth", () => Effect.void)
          ), { discard: true })
      },
      // Discord counts a message's length in code points (its API is Python's `len`).
      validate: (text, limits = defaultLimits) => lengthProblems(text, [...text].length, limits),
      // Discord's limits are the same for every webhook.
      validateMedia: (media) => discordMediaProblems(media),
      analytics: null
    }
    return provider
  }),
  dependencies: [DiscordClient.Default]
}) {}
