import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { maxAltTextLength } from "./AltText.js"
import { integer, oneOf } from "./Fields.js"
import { maxMediaPerPost, maxPostLength, maxThreadParts } from "./PostParts.js"
import { SocialProvider } from "./SocialAccounts.js"

const wholeNumber = Schema.Number.pipe(Schema.filter(Number.isInteger, { jsonSchema: { type: "integer" } }))

/** A limit as a whole number, or null where there is none; described as a whole, where readers of the document look. */
const limit = (description: string) => Schema.NullOr(wholeNumber).annotations({ description })

export const ProviderConnectMethod = oneOf("app_password", "access_token", "signed_webhook", "oauth", "channel_webhook", "bot_token").annotations({
  identifier: "ProviderConnectMethod",
  description: "app_password: a handle and an app password; access_token: an instance and an access token; " +
    "bot_token: a bot's token and the chat it posts to, the bot added to that chat (Telegram); " +
    "signed_webhook: an address of your own, which receives signed events; channel_webhook: the URL of a channel's " +
    "webhook that the network made (Discord), pasted; oauth: only by signing in at the network " +
    "(POST /v1/teams/{teamId}/social-accounts/connect). More methods may be added: treat one you do not know as not " +
    "supported by your client"
})
export type ProviderConnectMethod = typeof ProviderConnectMethod.Type

export const ProviderOAuth = Schema.Struct({
  configured: Schema.Boolean.annotations({
    description: "Whether this server can connect accounts of this network by signing in now"
  }),
  missingSettings: Schema.Array(Schema.String).annotations({
    description: "The settings this server needs for it and lacks (e.g. X_CLIENT_ID); none when configured"
  }),
  scopes: Schema.Array(Schema.String).annotations({ description: "What Postline asks the network to allow" }),
  refreshes: Schema.Boolean.annotations({
    description: "Whether the network's tokens expire and Postline renews them (the account stays connected)"
  })
}).annotations({
  identifier: "ProviderOAuth",
  description: "Connecting by signing in at the network: POST /v1/teams/{teamId}/social-accounts/connect"
})

export const ProviderConnect = Schema.Struct({
  method: ProviderConnectMethod,
  description: Schema.String.annotations({
    description: "What POST /v1/teams/{teamId}/social-accounts takes, in a sentence (for oauth: what the connect takes)"
  }),
  oauth: Schema.NullOr(ProviderOAuth).annotations({ description: "null: the network is not connected by signing in" })
}).annotations({ identifier: "ProviderConnect", description: "How an account of this provider is connected" })

export const TextCounting = oneOf("graphemes", "weighted", "code_points", "utf16").annotations({
  identifier: "TextCounting",
  description: "weighted: as X counts (twitter-text): a character of Latin, Cyrillic and similar scripts counts one, " +
    "any other (CJK, emoji) two, normalized (NFC) first, and every URL 23. " +
    "code_points: every Unicode code point counts one, as Discord counts (an emoji with a skin tone counts two). " +
    "utf16: every UTF-16 code unit counts one, as Telegram counts (a character beyond the Basic Multilingual " +
    "Plane, most emoji, counts two). " +
    "graphemes: what a person sees as one character counts as one (an emoji with a skin tone or a flag " +
    "too). Where urlLength is set, every URL counts as that many whatever its length, and a mention of an account " +
    "of another server (@bob@example.org) as its username alone (@bob)"
})

export const ProviderTextRules = Schema.Struct({
  maxLength: limit("The most characters a post's text (and each part of a thread) may have, counted as `counting` says"),
  counting: TextCounting,
  urlLength: limit("What every URL counts as, whatever its length (Mastodon: 23); null: a URL counts as written"),
  maxBytes: limit("The most bytes of UTF-8 the text may take besides (Bluesky: 3000)")
}).annotations({
  identifier: "ProviderTextRules",
  description: `What the provider takes as text; null: no limit of the provider's own (a post holds at most ${maxPostLength} characters anywhere)`
})

export const ProviderMediaRules = Schema.Struct({
  maxItems: limit(`The most images and videos in one post (a post holds at most ${maxMediaPerPost} anywhere)`),
  contentTypes: Schema.Array(Schema.String).annotations({
    description: "The media types it takes, of those Postline stores (a video is video/mp4); none: no media"
  }),
  maxImageBytes: limit("The largest image in bytes. Bluesky: Postline sends a larger image re-encoded to fit"),
  maxVideoBytes: limit("The largest video in bytes"),
  maxImagePixels: limit("The most pixels of an image (width × height)"),
  maxVideoPixels: limit("The most pixels of a video's frame (width × height)"),
  maxAltTextLength: limit(`The most characters of a medium's alt text (Postline takes at most ${maxAltTextLength} anywhere)`),
  maxVideoSeconds: limit("The longest video in seconds"),
  perAccount: Schema.Boolean.annotations({
    description: "true: each account's server sets its own limits (a Mastodon instance), read when the account is " +
      "connected or checked, and those are the ones applied; the values here are the provider's defaults"
  })
}).annotations({
  identifier: "ProviderMediaRules",
  description: "The images and videos it takes, checked before anything is sent; null: no limit of the provider's " +
    "own, or, for videos, none taken (no video type in contentTypes)"
})

export const ProviderFeatures = Schema.Struct({
  threads: Schema.Boolean.annotations({ description: "Whether a post may be published as a thread of parts" }),
  maxThreadParts: integer(`The most parts of a thread (${maxThreadParts})`),
  firstComment: Schema.Boolean.annotations({ description: "Whether a post may carry a first comment, published after it" }),
  delete: Schema.Boolean.annotations({ description: "Whether a published post may be deleted from the provider" }),
  analytics: Schema.Boolean.annotations({
    description: "Whether Postline can read a published post's and the account's figures there (…/analytics); false: " +
      "the provider tells none (a webhook, a Telegram bot), so none are read or charged for"
  })
}).annotations({ identifier: "ProviderFeatures" })

export const ProviderCredits = Schema.Struct({
  perPublish: integer(
    "The credits one publish to one account costs on this server (its CREDIT_COSTS). A thread costs one publish " +
      "per part, and a first comment one more"
  )
}).annotations({ identifier: "ProviderCredits" })

export const ProviderBudgetWindow = Schema.Struct({
  limit: integer("The points an account may spend in the window"),
  cost: integer("The points each call costs"),
  seconds: integer("The window's length in seconds")
}).annotations({
  identifier: "ProviderBudgetWindow",
  description: "At most `limit` points in any `seconds`, each call costing `cost`: a send over it waits until the " +
    "window lets it through"
})

export const ProviderRules = Schema.Struct({
  provider: SocialProvider,
  displayName: Schema.String,
  connect: ProviderConnect,
  text: ProviderTextRules,
  media: ProviderMediaRules,
  features: ProviderFeatures,
  credits: ProviderCredits,
  budgets: Schema.Array(ProviderBudgetWindow).annotations({
    description: "The calls one account may make, per window, on this server (its PROVIDER_BUDGETS); none: no limit"
  })
}).annotations({
  identifier: "ProviderRules",
  description: "What one provider takes and allows, as this server checks it before sending"
})
export type ProviderRules = typeof ProviderRules.Type

export const ProviderRulesList = Schema.Struct({
  data: Schema.Array(ProviderRules)
}).annotations({ identifier: "ProviderRulesList", description: "Every provider, each once: the whole list, never paged" })
export type ProviderRulesList = typeof ProviderRulesList.Type

export class ProvidersGroup extends HttpApiGroup.make("providers")
  .add(
    HttpApiEndpoint.get("listProviders", "/v1/providers")
      .addSuccess(ProviderRulesList)
      .annotate(OpenApi.Summary, "List providers")
      .annotate(
        OpenApi.Description,
        "Each provider's rules: how an account is connected, the text and media it takes, what it can do (threads, " +
          "a first comment, deleting), what a publish costs and the calls an account may make. Read it before " +
          "writing a post: a text or medium over these limits is refused before sending. Any caller may read it."
      )
  )
  .annotate(OpenApi.Title, "providers")
  .annotate(OpenApi.Description, "The social networks posts are published to, and their rules")
{}
