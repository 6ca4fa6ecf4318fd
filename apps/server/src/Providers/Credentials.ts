import { ConnectBluesky, ConnectDiscord, ConnectMastodon, ConnectTelegram, ConnectWebhook, SocialProvider } from "@postline/domain"
import { Schema } from "effect"

export const ProviderName = SocialProvider
export type ProviderName = SocialProvider

/** Bluesky's own service, where accounts live unless they name another PDS. */
export const defaultBlueskyService = "https://bsky.social"

/** As the API takes them: a handle, an app password, and the PDS when it is not Bluesky's own. */
export const BlueskyAppPassword = ConnectBluesky

/**
 * A Bluesky account connected by signing in (atproto OAuth): its DID and the OAuth client's session row (its DPoP
 * key and tokens) as the client keeps it, in JSON, renewed before its access token expires.
 */
export const BlueskySignedIn = Schema.Struct({
  provider: Schema.Literal("bluesky"),
  did: Schema.String,
  /** The callback address it was connected through: the loopback client's id names it, and renewing takes that id. */
  redirectUri: Schema.String,
  oauthSession: Schema.Redacted(Schema.String)
})

export const BlueskyCredentials = Schema.Union(BlueskyAppPassword, BlueskySignedIn)

/** An app registered on a network for Postline (a Mastodon instance's, made the first time one of its users connects). */
export const OAuthClient = Schema.Struct({
  clientId: Schema.String,
  clientSecret: Schema.Redacted(Schema.String)
})
export type OAuthClient = typeof OAuthClient.Type

/** As the API takes them, and, for a token got by signing in, the instance's app that revoking it takes. */
export const MastodonCredentials = Schema.Struct({
  ...ConnectMastodon.fields,
  oauthClient: Schema.optionalWith(OAuthClient, { exact: true })
})

/** What X gave when the account was connected by signing in (OAuth 2.0 with PKCE), renewed before it expires. */
export const XCredentials = Schema.Struct({
  provider: Schema.Literal("x"),
  /** The X user's id: the same user connected again updates this account. */
  userId: Schema.String,
  accessToken: Schema.Redacted(Schema.String),
  /** X rotates it at each refresh: the one before stops working. */
  refreshToken: Schema.NullOr(Schema.Redacted(Schema.String)),
  /** When the access token expires (ISO 8601); null: X did not say. */
  expiresAt: Schema.NullOr(Schema.String),
  /** The scopes X granted, space-separated. */
  scope: Schema.String
})

/** A Telegram bot's token (Redacted) and the chat it posts to, as the API takes them. */
export const TelegramCredentials = ConnectTelegram

/** A Discord channel's webhook URL (Redacted: its token lets anyone post there) and the name the team gave it, as the API takes them. */
export const DiscordCredentials = ConnectDiscord

/** The URL the team gave, and the signing secret made when it was connected. */
export const WebhookCredentials = Schema.Struct({
  ...ConnectWebhook.fields,
  /** `whsec_` and base64 (Standard Webhooks), made by `generateSigningSecret` when the webhook is connected. */
  signingSecret: Schema.Redacted(
    Schema.String.pipe(Schema.pattern(/^whsec_[A-Za-z0-9+/]{32,}={0,2}$/)).annotations({
      message: () => "Expected a signing secret (whsec_...)"
    })
  )
})

/** What it takes to reach an account, secrets included: stored encrypted (CredentialsCipher), never logged. */
export const ProviderCredentials = Schema.Union(BlueskyAppPassword, BlueskySignedIn, MastodonCredentials, XCredentials, TelegramCredentials, DiscordCredentials, WebhookCredentials)
export type ProviderCredentials = typeof ProviderCredentials.Type

export type CredentialsOf<P extends ProviderName> = Extract<ProviderCredentials, { readonly provider: P }>

const CredentialsJson = Schema.parseJson(ProviderCredentials)

/** Credentials as JSON, secrets in clear: only ever the plaintext of CredentialsCipher.encrypt. */
export const credentialsToJson = Schema.encode(CredentialsJson)

/** Credentials back from the JSON that CredentialsCipher.decrypt gives. */
export const credentialsFromJson = Schema.decode(CredentialsJson)
