import { maxThreadParts, type ProviderRules, type SocialProvider } from "@postline/domain"
import { defaultBlueskyService } from "./Credentials.js"
import type { ContentLimits, MediaLimits } from "./SocialProvider.js"

/**
 * Each provider's rules, in one place: what GET /v1/providers answers and what the adapters check before sending
 * (Bluesky.ts, Mastodon.ts, MastodonMedia.ts, Webhook.ts read their limits from here). The configured parts, a
 * publish's credits (CREDIT_COSTS), an account's budgets (PROVIDER_BUDGETS) and whether signing in is set up
 * (OAuthNetworks), are added by Http.ts.
 */
export type FixedRules = Omit<ProviderRules, "credits" | "budgets" | "connect"> & {
  readonly connect: Omit<ProviderRules["connect"], "oauth">
}

const imageTypes = ["image/jpeg", "image/png", "image/webp", "image/gif"] as const

// Every type Postline stores (Assets/Inspection.ts).
const storedTypes = [...imageTypes, "video/mp4"] as const

// Replies to the post's root and parent, a reply of the account's own, and deleting the record or status; a
// webhook gets one signed event with every part and the first comment, and a signed post.deleted event; a Discord
// channel one message per part, each after the one before (a webhook cannot reply), each deleted.
const features = { threads: true, maxThreadParts, firstComment: true, delete: true, analytics: false } as const

// Bluesky, Mastodon and X tell a post's and an account's counts (Analytics/); the others tell none.
const withAnalytics = { ...features, analytics: true } as const

const bluesky = {
  provider: "bluesky",
  displayName: "Bluesky",
  connect: {
    method: "app_password",
    description: "The handle (alice.bsky.social), email or DID the account logs in with and an app password " +
      `(xxxx-xxxx-xxxx-xxxx, from Bluesky's settings), never the account's own; serviceUrl for a PDS other than ${defaultBlueskyService}`
  },
  // app.bsky.feed.post caps the text at 300 graphemes and at 3000 bytes of UTF-8, which 300 long graphemes can pass.
  text: { maxLength: 300, counting: "graphemes", urlLength: null, maxBytes: 3000 },
  // app.bsky.embed.images: at most 4 images of at most 2,000,000 bytes (a larger one is sent re-encoded to fit,
  // BlueskyImages.ts); the lexicon sets no pixels or alt text length. Postline sends no video to Bluesky yet.
  media: {
    maxItems: 4,
    contentTypes: imageTypes,
    maxImageBytes: 2_000_000,
    maxVideoBytes: null,
    maxImagePixels: null,
    maxVideoPixels: null,
    maxAltTextLength: null,
    maxVideoSeconds: null,
    perAccount: false
  },
  features: withAnalytics
} as const satisfies FixedRules

const mastodon = {
  provider: "mastodon",
  displayName: "Mastodon",
  connect: {
    method: "access_token",
    description: "The instance's URL (instanceUrl, e.g. https://mastodon.social) and an access token with the " +
      "read:accounts, write:statuses and write:media scopes"
  },
  // Mastodon's defaults; an instance says its own (/api/v2/instance), read when the account is connected.
  text: { maxLength: 500, counting: "graphemes", urlLength: 23, maxBytes: null },
  // Mastodon's own (app/models/media_attachment.rb), for servers that do not say; it sets no video duration.
  media: {
    maxItems: 4,
    contentTypes: storedTypes,
    maxImageBytes: 16 * 1024 * 1024,
    maxVideoBytes: 99 * 1024 * 1024,
    maxImagePixels: 7680 * 4320,
    maxVideoPixels: 3840 * 2160,
    maxAltTextLength: 1500,
    maxVideoSeconds: null,
    perAccount: true
  },
  features: withAnalytics
} as const satisfies FixedRules

const webhook = {
  provider: "webhook",
  displayName: "Webhook",
  connect: {
    method: "signed_webhook",
    description: "An address of your own (url): each publish is POSTed to it as a JSON event, signed (Standard " +
      "Webhooks) with a secret made when it is connected and shown that once"
  },
  text: { maxLength: null, counting: "graphemes", urlLength: null, maxBytes: null },
  // Media go as links (Webhook.ts): nothing about them is refused.
  media: {
    maxItems: null,
    contentTypes: storedTypes,
    maxImageBytes: null,
    maxVideoBytes: null,
    maxImagePixels: null,
    maxVideoPixels: null,
    maxAltTextLength: null,
    maxVideoSeconds: null,
    perAccount: false
  },
  features
} as const satisfies FixedRules

const x = {
  provider: "x",
  displayName: "X",
  connect: {
    method: "oauth",
    description: "Only by signing in at X and approving Postline (provider x): Postline keeps the tokens X gives and " +
      "renews them"
  },
  // docs.x.com/resources/fundamentals/counting-characters: twitter-text's weighted length, URLs 23.
  text: { maxLength: 280, counting: "weighted", urlLength: 23, maxBytes: null },
  // docs.x.com/x-api/media/introduction and quickstart/best-practices: up to 4 images, or 1 animated GIF (15 MB), or
  // 1 video; alt text up to 1000 characters (media metadata). X caps a video at 140 s, which Postline cannot check.
  media: {
    maxItems: 4,
    contentTypes: storedTypes,
    maxImageBytes: 5 * 1024 * 1024,
    maxVideoBytes: 512 * 1024 * 1024,
    maxImagePixels: null,
    maxVideoPixels: null,
    maxAltTextLength: 1000,
    maxVideoSeconds: null,
    perAccount: false
  },
  features: withAnalytics
} as const satisfies FixedRules

const telegram = {
  provider: "telegram",
  displayName: "Telegram",
  connect: {
    method: "bot_token",
    description: "A bot's token from @BotFather (botToken) and the chat it posts to (chatId: a channel's @username or " +
      "a numeric chat id such as -1001234567890); the bot must be an administrator of the channel allowed to post " +
      "messages, or a member of the group allowed to send them"
  },
  // core.telegram.org/bots/api#sendmessage: 4096 characters after entities parsing, which Telegram counts in UTF-16
  // code units (core.telegram.org/api/entities). Postline sends plain text: nothing in it is parsed.
  text: { maxLength: 4096, counting: "utf16", urlLength: null, maxBytes: null },
  // core.telegram.org/bots/api#sending-files (multipart): photos 10 MB, other files 50 MB; sendMediaGroup takes 2–10.
  // Telegram has no alt text (it is left out) and sends a GIF as an animation, which Postline does not send; a
  // photo's width and height together at most 10000, one at most 20 times the other (sendPhoto), TelegramMedia.ts checks.
  media: {
    maxItems: 10,
    contentTypes: ["image/jpeg", "image/png", "image/webp", "video/mp4"],
    maxImageBytes: 10 * 1024 * 1024,
    maxVideoBytes: 50 * 1024 * 1024,
    maxImagePixels: null,
    maxVideoPixels: null,
    maxAltTextLength: null,
    maxVideoSeconds: null,
    perAccount: false
  },
  features
} as const satisfies FixedRules

const discord = {
  provider: "discord",
  displayName: "Discord",
  connect: {
    method: "channel_webhook",
    description: "The URL of the channel's webhook (webhookUrl, from Server Settings → Integrations → Webhooks → Copy " +
      "Webhook URL). Messages go out under the webhook's name and never ping anyone (@everyone, roles and users stay " +
      "text). A webhook cannot reply: a thread's later parts and a first comment are the messages that follow, in order"
  },
  // docs/resources/webhook#execute-webhook: content up to 2000 characters, which Discord counts in code points.
  text: { maxLength: 2000, counting: "code_points", urlLength: null, maxBytes: null },
  // docs/reference#uploading-files: 10 files a message, 10 MiB each by default (a boosted server takes more, which a
  // webhook cannot tell); an attachment's description (the alt text) up to 1024 characters. Any type goes as a file.
  media: {
    maxItems: 10,
    contentTypes: storedTypes,
    maxImageBytes: 10 * 1024 * 1024,
    maxVideoBytes: 10 * 1024 * 1024,
    maxImagePixels: null,
    maxVideoPixels: null,
    maxAltTextLength: 1024,
    maxVideoSeconds: null,
    perAccount: false
  },
  features
} as const satisfies FixedRules

export const providerRules = { bluesky, mastodon, x, telegram, discord, webhook } as const satisfies { readonly [P in SocialProvider]: FixedRules & { readonly provider: P } }

/** Mastodon's media limits where an instance does not say its own, as MastodonMedia.ts checks them. */
export const mastodonDefaultMediaLimits: MediaLimits = {
  maxAttachments: mastodon.media.maxItems,
  contentTypes: mastodon.media.contentTypes,
  maxImageBytes: mastodon.media.maxImageBytes,
  maxVideoBytes: mastodon.media.maxVideoBytes,
  maxImagePixels: mastodon.media.maxImagePixels,
  maxVideoPixels: mastodon.media.maxVideoPixels,
  maxAltTextLength: mastodon.media.maxAltTextLength
}

/** The limits each adapter applies until an account's own are read (`SocialProvider.defaultLimits`). */
export const defaultContentLimits = {
  bluesky: { maxLength: bluesky.text.maxLength, urlLength: bluesky.text.urlLength },
  mastodon: { maxLength: mastodon.text.maxLength, urlLength: mastodon.text.urlLength, media: mastodonDefaultMediaLimits },
  webhook: { maxLength: webhook.text.maxLength, urlLength: webhook.text.urlLength },
  x: { maxLength: x.text.maxLength, urlLength: x.text.urlLength },
  telegram: { maxLength: telegram.text.maxLength, urlLength: telegram.text.urlLength },
  discord: { maxLength: discord.text.maxLength, urlLength: discord.text.urlLength }
} as const satisfies { readonly [P in SocialProvider]: ContentLimits }

/** How people name the provider ("X", "Mastodon"), for messages and pages. */
export const displayNameOf = (provider: SocialProvider): string => providerRules[provider].displayName
