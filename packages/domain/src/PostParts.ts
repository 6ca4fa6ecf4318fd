import { Schema } from "effect"
import { AltText } from "./AltText.js"
import { integer, invalidUnless, oneOf, optional, strict, visibleText } from "./Fields.js"
import { AssetId, SocialAccountId } from "./Ids.js"
import { maxTargetsPerPublish } from "./TargetAccountIds.js"

/** What a post's body is made of: its text and media, the further parts of a thread, a first comment, versions. */

export const maxPostLength = 10_000
/** More than any provider takes (Bluesky and Mastodon: 4); a provider's own limit is checked before sending. */
export const maxMediaPerPost = 10
/** The most parts a thread has, its first included. */
export const maxThreadParts = 25

export const PostContent = visibleText({
  // \s is what String.prototype.trim removes: a post of these alone is blank.
  blankRanges: "\\s",
  minLength: 1,
  maxLength: maxPostLength
}).annotations({
  identifier: "PostContent",
  description: `The text, 1 to ${maxPostLength} characters, not blank; each provider's own limit applies when it is published`,
  ...invalidUnless(`must be 1 to ${maxPostLength} characters, not blank`)
})

export const PostMedium = Schema.Struct({
  assetId: AssetId,
  altText: Schema.NullOr(Schema.String).annotations({
    description: "The post's own alt text for it; null: the asset's alt text is sent"
  })
}).annotations({ identifier: "PostMedium", description: "An asset of the team sent with the post, in order" })
export type PostMedium = typeof PostMedium.Type

const PostMediumInput = Schema.Struct({
  assetId: AssetId,
  altText: optional(Schema.NullOr(AltText).annotations({ description: "Overrides the asset's alt text for this post" }))
}).annotations({ ...strict, identifier: "PostMediumInput" })
export type PostMediumInput = typeof PostMediumInput.Type

export const MediaInput = Schema.Array(PostMediumInput).pipe(
  Schema.filter((items) => items.length <= maxMediaPerPost, { jsonSchema: { maxItems: maxMediaPerPost } })
).annotations({
  description: `Images and videos of the team's library to send with it, in order: at most ${maxMediaPerPost}, each ` +
    "once; each provider's own limits (Bluesky: 4 images; Mastodon: the instance's) are checked before sending",
  ...invalidUnless(`must be at most ${maxMediaPerPost} media, each { assetId, altText? }`)
})

/** One part of a thread, or a first comment, as the post shows it. */
export const PostPart = Schema.Struct({
  content: Schema.String,
  media: Schema.Array(PostMedium)
}).annotations({ identifier: "PostPart" })
export type PostPart = typeof PostPart.Type

export const PostPartInput = Schema.Struct({
  content: PostContent,
  media: optional(MediaInput)
}).annotations({ ...strict, identifier: "PostPartInput", description: "A text and its media" })
export type PostPartInput = typeof PostPartInput.Type

export const ThreadInput = Schema.Array(PostPartInput).pipe(
  Schema.filter((parts) => parts.length < maxThreadParts, { jsonSchema: { maxItems: maxThreadParts - 1 } })
).annotations({
  description: `The parts that follow the first (content and media), in order: published as the network's own ` +
    `thread, each a reply to the one before. At most ${maxThreadParts - 1}, so ${maxThreadParts} parts in all; each ` +
    "part is checked against the account's limits and costs one publish",
  ...invalidUnless(`must be at most ${maxThreadParts - 1} parts, each { content, media? }`)
})

export const FirstCommentInput = Schema.NullOr(PostPartInput).annotations({
  description: "Posted as a reply right after the post (its last part, on a thread), on networks that take one: its " +
    "failure does not fail the post and is shown per account. Costs one publish. null: none"
})

/** What one account gets instead of the post's body: each field given replaces the post's, the rest is the post's. */
export const PostVersion = Schema.Struct({
  socialAccountId: SocialAccountId,
  content: Schema.NullOr(Schema.String).annotations({ description: "null: the post's" }),
  media: Schema.NullOr(Schema.Array(PostMedium)).annotations({ description: "null: the post's" }),
  thread: Schema.NullOr(Schema.Array(PostPart)).annotations({ description: "null: the post's" })
}).annotations({ identifier: "PostVersion" })
export type PostVersion = typeof PostVersion.Type

export const PostVersionInput = Schema.Struct({
  socialAccountId: SocialAccountId.annotations({ description: "An account the post is meant for" }),
  content: optional(PostContent),
  media: optional(MediaInput),
  thread: optional(ThreadInput)
}).annotations({
  ...strict,
  identifier: "PostVersionInput",
  description: "What this account gets instead of the post's content, media or thread: what it leaves out is the post's"
})
export type PostVersionInput = typeof PostVersionInput.Type

export const VersionsInput = Schema.Array(PostVersionInput).pipe(
  Schema.filter(
    (versions) =>
      versions.length <= maxTargetsPerPublish &&
      new Set(versions.map((version) => version.socialAccountId)).size === versions.length,
    { jsonSchema: { maxItems: maxTargetsPerPublish } }
  )
).annotations({
  description: `Versions for single accounts, at most one per account and ${maxTargetsPerPublish} in all; they replace ` +
    "the post's versions as a whole. Validation, estimates and results use the version each account gets",
  ...invalidUnless(`must be at most ${maxTargetsPerPublish} versions, one per social account`)
})

/** A part as it went out to one account. */
export const PublishedPart = Schema.Struct({
  position: integer("1 for the post's first part, 2 for the reply to it, and so on"),
  externalId: Schema.NullOr(Schema.String).annotations({ description: "The provider's id of this part" }),
  url: Schema.NullOr(Schema.String)
}).annotations({ identifier: "PublishedPart" })
export type PublishedPart = typeof PublishedPart.Type

export const FirstCommentResult = Schema.Struct({
  status: oneOf("published", "failed"),
  externalId: Schema.NullOr(Schema.String),
  url: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String).annotations({ description: "Why it failed; null unless it failed" })
}).annotations({ identifier: "FirstCommentResult", description: "What became of the first comment on one account" })
export type FirstCommentResult = typeof FirstCommentResult.Type
