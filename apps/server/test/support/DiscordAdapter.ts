import { ConfigProvider, Context, Effect, Layer, Redacted } from "effect"
import { Outbound } from "../../src/Outbound/Outbound.js"
import { Discord } from "../../src/Providers/Discord.js"
import type { PublishMedia } from "../../src/Providers/SocialProvider.js"
import type { DiscordFake, DiscordFakeWebhook } from "./DiscordFake.js"

/** The Discord adapter as the server builds it, its DISCORD_API_URL the fake's, allowed to reach this machine. */
export const discordAgainst = (fake: DiscordFake) =>
  Layer.build(Discord.Default.pipe(
    Layer.provide(Outbound.Default({ allowPrivate: true })),
    Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["DISCORD_API_URL", fake.apiUrl]]))))
  )).pipe(Effect.map(Context.get(Discord)))

/** An account of the webhook, its URL as Discord's Copy Webhook URL gives it. */
export const discordAccount = (fake: DiscordFake, webhook: DiscordFakeWebhook = fake.webhook, name?: string) => ({
  id: "account-1",
  credentials: {
    provider: "discord" as const,
    webhookUrl: Redacted.make(fake.webhookUrl(webhook)),
    ...(name !== undefined ? { name } : {})
  }
})

/** A part of a post; a later part names the one before as `replyTo`. */
export const discordPost = (text: string, media: ReadonlyArray<PublishMedia> = [], replyToId?: string) => ({
  postId: "post-1",
  idempotencyKey: crypto.randomUUID(),
  text,
  media,
  ...(replyToId
    ? { replyTo: { root: { externalId: replyToId, reference: null }, parent: { externalId: replyToId, reference: null } } }
    : {})
})
