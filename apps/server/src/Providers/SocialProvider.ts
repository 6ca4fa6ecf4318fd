import { ProviderErrorCategory, SocialProvider as ProviderNameSchema } from "@postline/domain"
import { Effect, Schema, type Scope } from "effect"
import type { CredentialsOf, ProviderName } from "./Credentials.js"

/** What an account's server accepts as attachments (a Mastodon instance sets its own). */
export const MediaLimits = Schema.Struct({
  maxAttachments: Schema.Int,
  /** The MIME types it takes. */
  contentTypes: Schema.Array(Schema.String),
  maxImageBytes: Schema.Int,
  maxVideoBytes: Schema.Int,
  /** Width times height. */
  maxImagePixels: Schema.Int,
  maxVideoPixels: Schema.Int,
  /** In Unicode code points. */
  maxAltTextLength: Schema.Int
})
export type MediaLimits = typeof MediaLimits.Type

/**
 * What a provider accepts in a post's text. Lengths count grapheme clusters (what a person sees as one
 * character), as Bluesky and Mastodon both do.
 */
export const ContentLimits = Schema.Struct({
  /** Null: the provider sets no limit. */
  maxLength: Schema.NullOr(Schema.Int),
  /** Null, or what every URL counts as whatever its length (Mastodon: 23). */
  urlLength: Schema.NullOr(Schema.Int),
  /** Absent where the provider's limits are fixed, and in limits stored before media existed: the provider's defaults apply. */
  media: Schema.optional(MediaLimits)
})
export type ContentLimits = typeof ContentLimits.Type

/** One reason the provider would refuse a text or its media, found before anything is sent. */
export const ContentProblem = Schema.Struct({
  code: Schema.Literal("empty", "too_long", "media"),
  message: Schema.String,
  length: Schema.optional(Schema.Int),
  maxLength: Schema.optional(Schema.Int)
})
export type ContentProblem = typeof ContentProblem.Type

/** The account that credentials give access to, as `verify` finds it. */
export const Profile = Schema.Struct({
  /**
   * The network's own id of the user, which a handle change keeps (a DID; an instance's host and account id; an
   * X user id); null for a webhook. Connecting the same user again updates their account instead of adding one.
   */
  networkUserId: Schema.NullOr(Schema.String),
  handle: Schema.String,
  displayName: Schema.NullOr(Schema.String),
  avatarUrl: Schema.NullOr(Schema.String),
  profileUrl: Schema.NullOr(Schema.String),
  limits: ContentLimits
})
export type Profile = typeof Profile.Type

/** What is known of an image or video before it is sent: enough to check it against a provider's limits. */
export interface MediaFacts {
  readonly kind: "image" | "video"
  /** The stored copy's type: image/jpeg, image/png, image/webp, image/gif or video/mp4. */
  readonly contentType: string
  /** The stored copy's size in bytes. */
  readonly size: number
  readonly width: number | null
  readonly height: number | null
  /** The post's alt text for it, else the asset's; null when neither has one. */
  readonly altText: string | null
}

/** An image or video sent with a post, in the post's order. */
export interface PublishMedia extends MediaFacts {
  readonly assetId: string
  /** Hex SHA-256 of the stored copy. */
  readonly sha256: string
  /** A URL anyone may GET the stored copy from until `urlExpiresAt` (at least 24 hours on): what a webhook passes on. */
  readonly url: string
  readonly urlExpiresAt: string
  /** The stored copy (EXIF stripped) as a file-backed Blob, readable until the scope closes: nothing is held in memory. */
  readonly open: Effect.Effect<Blob, ProviderError, Scope.Scope>
}

/** A part a provider took: what replying to it and deleting it need. */
export interface PartReference {
  readonly externalId: string
  /** What else the provider needs to name it (Bluesky: the record's CID); null where nothing. */
  readonly reference: string | null
}

/** A text and its media: a part of a thread, or a first comment. */
export interface PublishPart {
  readonly text: string
  readonly media: ReadonlyArray<PublishMedia>
}

export interface PublishRequest extends PublishPart {
  readonly postId: string
  /**
   * The same for every attempt at publishing the same part to the same account, so that a retry does not post
   * twice where the provider can tell.
   */
  readonly idempotencyKey: string
  /** The thread this part answers (its first part, and the part before); absent for a post's first part. */
  readonly replyTo?: { readonly root: PartReference; readonly parent: PartReference }
  /** Given to a provider that takes a thread whole (`threads: "whole"`): the parts after this one, and the first comment. */
  readonly rest?: { readonly thread: ReadonlyArray<PublishPart>; readonly firstComment: PublishPart | null }
}

/** Taking down what a post's parts became on one account. */
export interface RemoveRequest {
  readonly postId: string
  /** The same for every attempt at taking down the same post from the same account. */
  readonly idempotencyKey: string
  /** Every part that went out (its first comment included), in order. */
  readonly parts: ReadonlyArray<PartReference>
}

export const Published = Schema.Struct({
  /** The provider's id of the post: an at:// URI, a Mastodon status id, a webhook's message id. */
  externalId: Schema.String,
  url: Schema.NullOr(Schema.String),
  /** Bluesky: the record's CID, which a reply to it names. */
  reference: Schema.optional(Schema.String)
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

/** A published post's counts as the provider answers them (null: it does not say), and its raw answer about it. */
export interface Engagement {
  readonly externalId: string
  readonly likes: number | null
  readonly reposts: number | null
  readonly replies: number | null
  readonly quotes: number | null
  readonly views: number | null
  readonly raw: unknown
}

/** An account's counts as the provider answers them, and its raw answer. */
export interface AccountCounts {
  readonly followers: number | null
  readonly following: number | null
  readonly posts: number | null
  readonly raw: unknown
}

/** What a provider tells of published posts and accounts. */
export interface ProviderAnalytics<P extends ProviderName = ProviderName> {
  /** At most this many posts in one `engagement` call. */
  readonly batchSize: number
  /** The counts of these posts of the account, in one call; a post the provider no longer has is left out. */
  readonly engagement: (
    account: SocialAccountOf<P>,
    externalIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<Engagement>, ProviderError>
  readonly accountCounts: (account: SocialAccountOf<P>) => Effect.Effect<AccountCounts, ProviderError>
}

/** One social network, or a webhook, behind the same shape. */
export interface SocialProvider<P extends ProviderName = ProviderName> {
  readonly name: P
  /** The limits that apply until `verify` reads the account's own (a Mastodon instance sets its own). */
  readonly defaultLimits: ContentLimits
  /** Checks the credentials and reads the account's profile and content limits. */
  readonly verify: (credentials: CredentialsOf<P>) => Effect.Effect<Profile, ProviderError>
  /**
   * How it takes a thread: `replies`, one `publish` per part, each replying to the one before; `whole`, one
   * `publish` of the first part carrying the rest (a webhook's one event).
   */
  readonly threads: "replies" | "whole"
  readonly publish: (account: SocialAccountOf<P>, post: PublishRequest) => Effect.Effect<Published, ProviderError>
  /** Takes the parts down; a part the provider no longer has counts as taken down. */
  readonly remove: (account: SocialAccountOf<P>, request: RemoveRequest) => Effect.Effect<void, ProviderError>
  /** The problems the provider would find in this text, counted as it counts; none when it would accept it. */
  readonly validate: (text: string, limits?: ContentLimits) => ReadonlyArray<ContentProblem>
  /** The problems the provider would find in these media (code `media`); none when it would accept them. */
  readonly validateMedia: (media: ReadonlyArray<MediaFacts>, limits?: ContentLimits) => ReadonlyArray<ContentProblem>
  /** Null where the provider has nothing to read back (a webhook). */
  readonly analytics: ProviderAnalytics<P> | null
}

/** An account to publish to: its id in Postline and its decrypted credentials. */
export interface SocialAccountOf<P extends ProviderName = ProviderName> {
  readonly id: string
  readonly credentials: CredentialsOf<P>
}
