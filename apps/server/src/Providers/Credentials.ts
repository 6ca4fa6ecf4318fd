import { ConnectBluesky, ConnectMastodon, ConnectWebhook, SocialProvider } from "@postline/domain"
import { Schema } from "effect"

export const ProviderName = SocialProvider
export type ProviderName = SocialProvider

/** Bluesky's own service, where accounts live unless they name another PDS. */
export const defaultBlueskyService = "https://bsky.social"

/** As the API takes them: a handle, an app password, and the PDS when it is not Bluesky's own. */
export const BlueskyCredentials = ConnectBluesky

export const MastodonCredentials = ConnectMastodon

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
export const ProviderCredentials = Schema.Union(BlueskyCredentials, MastodonCredentials, WebhookCredentials)
export type ProviderCredentials = typeof ProviderCredentials.Type

export type CredentialsOf<P extends ProviderName> = Extract<ProviderCredentials, { readonly provider: P }>

const CredentialsJson = Schema.parseJson(ProviderCredentials)

/** Credentials as JSON, secrets in clear: only ever the plaintext of CredentialsCipher.encrypt. */
export const credentialsToJson = Schema.encode(CredentialsJson)

/** Credentials back from the JSON that CredentialsCipher.decrypt gives. */
export const credentialsFromJson = Schema.decode(CredentialsJson)
