import { ProviderErrorCategory, SocialProvider as ProviderNameSchema } from "@postline/domain"
import { Effect, Schema } from "effect"
import type { CredentialsOf, ProviderName } from "./Credentials.js"

/**
 * What a provider accepts in a post's text. Lengths count grapheme clusters (what a person sees as one
 * character), as Bluesky and Mastodon both do.
 */
export const ContentLimits = Schema.Struct({
  /** Null: the provider sets no limit. */
  maxLength: Schema.NullOr(Schema.Int),
  /** Null, or what every URL counts as whatever its length (Mastodon: 23). */
  urlLength: Schema.NullOr(Schema.Int)
})
export type ContentLimits = typeof ContentLimits.Type

/** One reason the provider would refuse a text, found before anything is sent. */
export const ContentProblem = Schema.Struct({
  code: Schema.Literal("empty", "too_long"),
  message: Schema.String,
  length: Schema.optional(Schema.Int),
  maxLength: Schema.optional(Schema.Int)
})
export type ContentProblem = typeof ContentProblem.Type

/** The account that credentials give access to, as `verify` finds it. */
export const Profile = Schema.Struct({
  handle: Schema.String,
  displayName: Schema.NullOr(Schema.String),
  avatarUrl: Schema.NullOr(Schema.String),
  profileUrl: Schema.NullOr(Schema.String),
  limits: ContentLimits
})
export type Profile = typeof Profile.Type

export const PublishRequest = Schema.Struct({
  postId: Schema.String,
  text: Schema.String,
  /** The same for every attempt at publishing the same post, so that a retry does not post twice where the provider can tell. */
  idempotencyKey: Schema.String
})
export type PublishRequest = typeof PublishRequest.Type

export const Published = Schema.Struct({
  /** The provider's id of the post: an at:// URI, a Mastodon status id, a webhook's message id. */
  externalId: Schema.String,
  url: Schema.NullOr(Schema.String)
})
export type Published = typeof Published.Type

/**
 * A provider refused or could not be reached. `auth`: the credentials no longer work (the user must
 * reconnect); `rate_limited`: try again after `retryAfterSeconds` when known; `invalid_content`: this text
 * will never be accepted; `transient`: try again later; `unknown`: anything else, not retried.
 */
export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", {
  provider: ProviderNameSchema,
  category: ProviderErrorCategory,
  retryable: Schema.Boolean,
  retryAfterSeconds: Schema.optional(Schema.Number),
  /** The provider's HTTP status, when it answered. */
  providerStatus: Schema.optional(Schema.Int),
  /** What the provider (or the connection) said, without credentials. */
  providerMessage: Schema.String
}) {
  override get message() {
    return `${this.provider} ${this.category}${this.providerStatus ? ` (${this.providerStatus})` : ""}: ${this.providerMessage}`
  }
}

/** One social network, or a webhook, behind the same shape. */
export interface SocialProvider<P extends ProviderName = ProviderName> {
  readonly name: P
  /** The limits that apply until `verify` reads the account's own (a Mastodon instance sets its own). */
  readonly defaultLimits: ContentLimits
  /** Checks the credentials and reads the account's profile and content limits. */
  readonly verify: (credentials: CredentialsOf<P>) => Effect.Effect<Profile, ProviderError>
  readonly publish: (account: SocialAccountOf<P>, post: PublishRequest) => Effect.Effect<Published, ProviderError>
  /** The problems the provider would find in this text, counted as it counts; none when it would accept it. */
  readonly validate: (text: string, limits?: ContentLimits) => ReadonlyArray<ContentProblem>
}

/** An account to publish to: its id in Postline and its decrypted credentials. */
export interface SocialAccountOf<P extends ProviderName = ProviderName> {
  readonly id: string
  readonly credentials: CredentialsOf<P>
}
