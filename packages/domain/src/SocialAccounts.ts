import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  codePoints,
  httpUrlShape,
  invalidUnless,
  maxUrlLength,
  Name,
  oneOf,
  optional,
  strict,
  Text,
  Timestamp,
  WebsiteUrl
} from "./Fields.js"
import { SocialAccountId, TeamId } from "./Ids.js"
import { ListEnvelope, listQueryFields } from "./Lists.js"

export const SocialProvider = oneOf("bluesky", "mastodon", "x", "telegram", "discord", "webhook").annotations({
  identifier: "SocialProvider",
  description: "Where posts go: a Bluesky, Mastodon or X account, a Telegram channel or group (through a bot), a Discord channel (through its webhook), or a webhook of the team's own"
})
export type SocialProvider = typeof SocialProvider.Type

export const SocialAccountStatus = oneOf("connected", "reconnect_required").annotations({
  identifier: "SocialAccountStatus",
  description: "reconnect_required: the provider refused the credentials, or this server cannot read them, or a " +
    "network refused to renew its tokens (see lastError); connect it again (POST …/social-accounts/connect, or PATCH " +
    "new credentials) to publish again"
})
export type SocialAccountStatus = typeof SocialAccountStatus.Type

export const ProviderErrorCategory = oneOf("auth", "rate_limited", "invalid_content", "transient", "unknown").annotations({
  identifier: "ProviderErrorCategory",
  description: "auth: the credentials no longer work; rate_limited and transient: may pass if tried later; " +
    "invalid_content: the provider will not take this text; unknown: anything else"
})
export type ProviderErrorCategory = typeof ProviderErrorCategory.Type

export const SocialAccountError = Schema.Struct({
  category: ProviderErrorCategory,
  message: Schema.String,
  at: Timestamp
}).annotations({ identifier: "SocialAccountError", description: "The last failure of a check or a publish" })

export const SocialAccount = Schema.Struct({
  id: SocialAccountId,
  teamId: TeamId,
  provider: SocialProvider,
  handle: Schema.String.annotations({
    description: "The account's handle; for a webhook, its host; for a Telegram chat, its @username, else its title; " +
      "for a Discord channel, its webhook's name"
  }),
  displayName: Schema.NullOr(Schema.String),
  avatarUrl: Schema.NullOr(Schema.String),
  profileUrl: Schema.NullOr(Schema.String),
  status: SocialAccountStatus,
  lastError: Schema.NullOr(SocialAccountError),
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotations({
  identifier: "SocialAccount",
  description: "An account posts are published to. Its credentials are kept encrypted and never shown."
})
export type SocialAccount = typeof SocialAccount.Type

/** A secret in a request: decoded as `Redacted`, so that it is never logged. */
const secret = (pattern: RegExp, description: string, message: string) =>
  Schema.Redacted(
    Schema.String.pipe(Schema.pattern(pattern)).annotations({ description, ...invalidUnless(message) })
  )

const ServiceUrl = WebsiteUrl.annotations(invalidUnless("must be an absolute http or https URL"))

// No user name or password in an address: an HTTP client will not send a request to a URL with one, so the
// account could never publish. The URL parser takes for one whatever comes before an `@` in the authority
// (after the slashes that follow the scheme, up to a `/`, `\`, `?` or `#`), even nothing.
const addressShape = httpUrlShape({ userInfo: false })

/**
 * An address of the account. The document states the refusal of a user name or password in the pattern;
 * the server checks it on the whole request (SocialAccountCredentials), not here, where the accounts
 * already stored are read too.
 */
const address = (description: string) =>
  ServiceUrl.annotations({
    description: `${description}. No user name or password in it`,
    jsonSchema: { pattern: addressShape.source, maxLength: maxUrlLength }
  })

export const ConnectBluesky = Schema.Struct({
  provider: Schema.Literal("bluesky"),
  handle: Text.pipe(
    Schema.filter((handle) => codePoints(handle) >= 1 && codePoints(handle) <= 253, {
      jsonSchema: { minLength: 1, maxLength: 253 }
    })
  ).annotations({
    description: "The handle (`alice.bsky.social`), email or DID the account logs in with",
    ...invalidUnless("must be 1 to 253 characters")
  }),
  appPassword: secret(
    /^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/,
    "An app password (`xxxx-xxxx-xxxx-xxxx`, from Bluesky's settings), never the account's own password",
    "must be a Bluesky app password (xxxx-xxxx-xxxx-xxxx)"
  ),
  serviceUrl: optional(address("The account's PDS; default https://bsky.social"))
}).annotations({ ...strict, identifier: "ConnectBluesky" })

export const ConnectMastodon = Schema.Struct({
  provider: Schema.Literal("mastodon"),
  instanceUrl: address("The instance, e.g. `https://mastodon.social`"),
  accessToken: secret(
    /^[\x21-\x7E]{1,1024}$/,
    "An access token with the read:accounts, write:statuses and write:media scopes (write:media to send images and videos)",
    "must be an access token: 1 to 1024 printable ASCII characters"
  )
}).annotations({ ...strict, identifier: "ConnectMastodon" })

export const ConnectTelegram = Schema.Struct({
  provider: Schema.Literal("telegram"),
  botToken: secret(
    /^[0-9]{1,20}:[A-Za-z0-9_-]{30,100}$/,
    "The token @BotFather gave the bot (`123456789:AA…`). The bot must be an administrator of the channel allowed to " +
      "post messages, or a member of the group allowed to send them",
    "must be a Telegram bot token (<bot id>:<secret>, as @BotFather gives it)"
  ),
  chatId: Schema.String.pipe(Schema.pattern(/^(@[A-Za-z][A-Za-z0-9_]{3,31}|-?[1-9][0-9]{0,15})$/)).annotations({
    description: "The chat the bot posts to: a public channel's `@username`, or a chat's numeric id (a channel's or " +
      "supergroup's is like `-1001234567890`)",
    ...invalidUnless("must be a channel's @username or a numeric chat id such as -1001234567890")
  }),
  name: optional(Name.annotations({ description: "The account's displayName (default: the chat's title)" }))
}).annotations({ ...strict, identifier: "ConnectTelegram" })

export const ConnectWebhook = Schema.Struct({
  provider: Schema.Literal("webhook"),
  url: address("Where each publish is POSTed as a signed JSON event"),
  name: optional(Name.annotations({
    description: "The account's displayName (default: none): a webhook's handle is its host alone, which two webhooks may share"
  }))
}).annotations({ ...strict, identifier: "ConnectWebhook" })

/**
 * A Discord channel's webhook URL as Discord copies it (Server Settings → Integrations → Webhooks → Copy Webhook URL),
 * on discord.com or discordapp.com, ptb. or canary., with an API version or without: the webhook's id (1) and its
 * token (2), which is all it takes to post as it.
 */
export const discordWebhookUrlPattern =
  /^https:\/\/(?:(?:ptb|canary)\.)?discord(?:app)?\.com\/api(?:\/v[0-9]{1,2})?\/webhooks\/([0-9]{15,21})\/([A-Za-z0-9_-]{20,200})$/

export const ConnectDiscord = Schema.Struct({
  provider: Schema.Literal("discord"),
  webhookUrl: secret(
    discordWebhookUrlPattern,
    "The channel's webhook URL (`https://discord.com/api/webhooks/<id>/<token>`, from Server Settings → Integrations → " +
      "Webhooks → Copy Webhook URL). Its token lets anyone post to the channel: it is kept encrypted and never shown",
    "must be a Discord webhook URL (https://discord.com/api/webhooks/<id>/<token>)"
  ),
  name: optional(Name.annotations({
    description: "The account's displayName (default: the webhook's name in Discord)"
  }))
}).annotations({ ...strict, identifier: "ConnectDiscord" })

const Credentials = Schema.Union(ConnectBluesky, ConnectMastodon, ConnectTelegram, ConnectWebhook, ConnectDiscord)

const addressOf = (credentials: typeof Credentials.Type) => {
  switch (credentials.provider) {
    case "bluesky":
      return { field: "serviceUrl", url: credentials.serviceUrl }
    case "mastodon":
      return { field: "instanceUrl", url: credentials.instanceUrl }
    // A bot reaches Telegram's own API: no address of the user's.
    case "telegram":
      return { field: "chatId", url: undefined }
    case "webhook":
      return { field: "url", url: credentials.url }
    // Its pattern admits only Discord's hosts, with nothing before them.
    case "discord":
      return { field: "webhookUrl", url: undefined }
  }
}

const hasNoUserInfo = (credentials: typeof Credentials.Type) => {
  const { field, url } = addressOf(credentials)
  return url === undefined || addressShape.test(url) || { path: [field], message: "must not contain a user name or password" }
}

/** Credentials of one provider, chosen by `provider`. Each member's address pattern states the rule to the document. */
export const SocialAccountCredentials = Credentials.pipe(Schema.filter(hasNoUserInfo, { jsonSchema: {} })).annotations({
  identifier: "SocialAccountCredentials"
})
export type SocialAccountCredentials = typeof SocialAccountCredentials.Type

/** The answer to connecting an account: for a webhook, the only time its signing secret is shown. */
export const ConnectedSocialAccount = Schema.Struct({
  ...SocialAccount.fields,
  signingSecret: Schema.NullOr(Schema.String).annotations({
    description: "A webhook's Standard Webhooks signing secret (`whsec_…`), shown this once; null for other providers"
  })
}).annotations({ identifier: "ConnectedSocialAccount" })

export const SocialAccountListQuery = Schema.Struct({
  provider: optional(SocialProvider),
  status: optional(SocialAccountStatus),
  ...listQueryFields
}).annotations(strict)
export type SocialAccountListQuery = typeof SocialAccountListQuery.Type

export const SocialAccountList = ListEnvelope(SocialAccount, "SocialAccountList")

const teamPath = Schema.Struct({ teamId: TeamId })
const accountPath = Schema.Struct({ teamId: TeamId, socialAccountId: SocialAccountId })

export class SocialAccountsGroup extends HttpApiGroup.make("socialAccounts")
  .add(
    HttpApiEndpoint.get("listSocialAccounts", "/v1/teams/:teamId/social-accounts")
      .setPath(teamPath)
      .setUrlParams(SocialAccountListQuery)
      .addSuccess(SocialAccountList)
      .annotate(OpenApi.Summary, "List social accounts")
      .annotate(
        OpenApi.Description,
        "The team's accounts; any member may list them. Filters: provider, status. sortBy name sorts by handle."
      )
  )
  .add(
    HttpApiEndpoint.post("connectSocialAccount", "/v1/teams/:teamId/social-accounts")
      .setPath(teamPath)
      .setPayload(SocialAccountCredentials)
      .addSuccess(ConnectedSocialAccount, { status: 201 })
      .annotate(OpenApi.Summary, "Connect social account")
      .annotate(
        OpenApi.Description,
        "Checks the credentials with the provider and keeps them encrypted. Credentials the provider refuses give " +
          "400 `credentials_not_verified` with its reason, and nothing is kept. A webhook's signing secret is made here and answered this once. " +
          "Admins, owners and the organization's API keys may."
      )
  )
  .add(
    HttpApiEndpoint.get("getSocialAccount", "/v1/teams/:teamId/social-accounts/:socialAccountId")
      .setPath(accountPath)
      .addSuccess(SocialAccount)
      .annotate(OpenApi.Summary, "Get social account")
      .annotate(OpenApi.Description, "One account of the team; any member may see it, never its credentials.")
  )
  .add(
    HttpApiEndpoint.patch("updateSocialAccount", "/v1/teams/:teamId/social-accounts/:socialAccountId")
      .setPath(accountPath)
      .setPayload(SocialAccountCredentials)
      .addSuccess(SocialAccount)
      .annotate(OpenApi.Summary, "Update social account credentials")
      .annotate(
        OpenApi.Description,
        "New credentials of the same provider (400 `provider_mismatch` otherwise), checked with the provider again " +
          "(400 `credentials_not_verified` with its reason if refused, nothing changed); the account is then connected " +
          "again. A webhook keeps its signing secret: when this server cannot read it, 409 `credentials_unreadable`, " +
          "and the webhook is to be connected again for a new one."
      )
  )
  .add(
    HttpApiEndpoint.del("removeSocialAccount", "/v1/teams/:teamId/social-accounts/:socialAccountId")
      .setPath(accountPath)
      .addSuccess(SocialAccount)
      .annotate(OpenApi.Summary, "Remove social account")
      .annotate(OpenApi.Description, "Forgets the account and its credentials; answers the account as it was.")
  )
  .add(
    HttpApiEndpoint.post("verifySocialAccount", "/v1/teams/:teamId/social-accounts/:socialAccountId/verify")
      .setPath(accountPath)
      .addSuccess(SocialAccount)
      .annotate(OpenApi.Summary, "Check social account")
      .annotate(
        OpenApi.Description,
        "Checks the credentials with the provider now: connected if they work, reconnect_required if the provider " +
          "refuses them; any other failure is recorded in lastError and leaves the status as it was."
      )
  )
  .annotate(OpenApi.Title, "socialAccounts")
  .annotate(OpenApi.Description, "The accounts a team publishes to, and their credentials")
{}
