import { Effect, Option, Schema } from "effect"
import { MastodonClient } from "./MastodonClient.js"
import { defaultMediaLimits, MastodonMedia, mediaProblems } from "./MastodonMedia.js"
import { defaultContentLimits } from "./Rules.js"
import type { ContentLimits, SocialProvider } from "./SocialProvider.js"
import { lengthProblems, mastodonLength } from "./TextLength.js"

// The parts of Mastodon's answers that Postline reads (docs.joinmastodon.org/entities).
const Account = Schema.Struct({
  id: Schema.String,
  username: Schema.String,
  display_name: Schema.String,
  avatar: Schema.String,
  url: Schema.String
})

const Instance = Schema.Struct({
  domain: Schema.String,
  configuration: Schema.optional(Schema.Struct({
    statuses: Schema.optional(Schema.Struct({
      max_characters: Schema.optional(Schema.Int),
      characters_reserved_per_url: Schema.optional(Schema.Int),
      max_media_attachments: Schema.optional(Schema.Int)
    })),
    media_attachments: Schema.optional(Schema.Struct({
      supported_mime_types: Schema.optional(Schema.Array(Schema.String)),
      image_size_limit: Schema.optional(Schema.Int),
      image_matrix_limit: Schema.optional(Schema.Int),
      video_size_limit: Schema.optional(Schema.Int),
      video_matrix_limit: Schema.optional(Schema.Int),
      description_limit: Schema.optional(Schema.Int)
    }))
  }))
})

const Status = Schema.Struct({
  id: Schema.String,
  uri: Schema.String,
  url: Schema.optional(Schema.NullOr(Schema.String))
})

const Counted = Schema.Struct({
  id: Schema.String,
  favourites_count: Schema.optional(Schema.Int),
  reblogs_count: Schema.optional(Schema.Int),
  replies_count: Schema.optional(Schema.Int),
  // Mastodon 4.5 and later.
  quotes_count: Schema.optional(Schema.Int)
})

const AccountCounted = Schema.Struct({
  followers_count: Schema.optional(Schema.Int),
  following_count: Schema.optional(Schema.Int),
  statuses_count: Schema.optional(Schema.Int)
})

// The largest `id[]` list GET /api/v1/statuses takes (Api::V1::StatusesController's DEFAULT_STATUSES_LIMIT).
const statusesPerRead = 20

const decodeCounted = Schema.decodeUnknownOption(Counted)
const decodeAccountCounted = Schema.decodeUnknownOption(AccountCounted)

// Mastodon's defaults, Rules.ts's (GET /v1/providers answers them), until an instance says its own.
const defaultLimits: ContentLimits = defaultContentLimits.mastodon

/**
 * Mastodon, and servers that speak its API, over plain HTTP through the guarded outbound client: a few
 * documented calls do not need a client library, and this way every call is checked the same way. Media
 * are uploaded first, in the post's order, and the status names them.
 */
export class Mastodon extends Effect.Service<Mastodon>()("Mastodon", {
  effect: Effect.gen(function*() {
    const { call } = yield* MastodonClient
    const { upload } = yield* MastodonMedia

    const provider: SocialProvider<"mastodon"> = {
      name: "mastodon",
      defaultLimits,
      threads: "replies",
      verify: (credentials) =>
        Effect.gen(function*() {
          const account = yield* call(credentials, "/api/v1/accounts/verify_credentials", Account)
          // Servers older than Mastodon 4.0 have no /api/v2/instance: they had the default limits.
          const instance = yield* call(credentials, "/api/v2/instance", Instance).pipe(
            Effect.catchIf((error) => error.providerStatus === 404, () =>
              Effect.succeed({ domain: new URL(credentials.instanceUrl).hostname, configuration: undefined }))
          )
          const statuses = instance.configuration?.statuses
          const media = instance.configuration?.media_attachments
          return {
            networkUserId: `${new URL(credentials.instanceUrl).host}/${account.id}`,
            handle: `@${account.username}@${instance.domain}`,
            displayName: account.display_name === "" ? null : account.display_name,
            avatarUrl: account.avatar,
            profileUrl: account.url,
            limits: {
              maxLength: statuses?.max_characters ?? defaultLimits.maxLength,
              urlLength: statuses?.characters_reserved_per_url ?? defaultLimits.urlLength,
              media: {
                maxAttachments: statuses?.max_media_attachments ?? defaultMediaLimits.maxAttachments,
                contentTypes: media?.supported_mime_types ?? defaultMediaLimits.contentTypes,
                maxImageBytes: media?.image_size_limit ?? defaultMediaLimits.maxImageBytes,
                maxVideoBytes: media?.video_size_limit ?? defaultMediaLimits.maxVideoBytes,
                maxImagePixels: media?.image_matrix_limit ?? defaultMediaLimits.maxImagePixels,
                maxVideoPixels: media?.video_matrix_limit ?? defaultMediaLimits.maxVideoPixels,
                maxAltTextLength: media?.description_limit ?? defaultMediaLimits.maxAltTextLength
              }
            }
          }
        }),
      // Mastodon keeps an Idempotency-Key for an hour and answers a repeated one with the status it made (the
      // repeat's own uploads are left unattached, which Mastodon removes after a day).
      publish: (account, post) =>
        Effect.gen(function*() {
          const mediaIds = yield* Effect.forEach(post.media, (medium) => upload(account.credentials, medium))
          const status = yield* call(account.credentials, "/api/v1/statuses", Status, {
            method: "POST",
            headers: { "content-type": "application/json", "idempotency-key": post.idempotencyKey },
            body: JSON.stringify({
              status: post.text,
              ...(mediaIds.length > 0 ? { media_ids: mediaIds } : {}),
              // A thread is a chain of replies to one's own statuses.
              ...(post.replyTo ? { in_reply_to_id: post.replyTo.parent.externalId } : {})
            })
          })
          return { externalId: status.id, url: status.url ?? status.uri }
        }),
      // A status the instance no longer has (404) was taken down already.
      remove: (account, { parts }) =>
        Effect.forEach(parts, (part) =>
          call(account.credentials, `/api/v1/statuses/${encodeURIComponent(part.externalId)}`, Schema.Unknown, {
            method: "DELETE"
          }).pipe(Effect.catchIf((error) => error.providerStatus === 404, () => Effect.void)), { discard: true }),
      validate: (text, limits = defaultLimits) =>
        lengthProblems(text, mastodonLength(text, limits.urlLength ?? defaultLimits.urlLength!), limits),
      // Limits stored before media existed have none: Mastodon's defaults then.
      validateMedia: (media, limits = defaultLimits) => mediaProblems(media, limits.media ?? defaultMediaLimits),
      analytics: {
        batchSize: statusesPerRead,
        // Mastodon 4.3's GET /api/v1/statuses?id[]=: the statuses it still has and the caller may see, whole.
        engagement: (account, externalIds) =>
          Effect.map(
            call(
              account.credentials,
              `/api/v1/statuses?${externalIds.map((id) => `id[]=${encodeURIComponent(id)}`).join("&")}`,
              Schema.Array(Schema.Unknown)
            ),
            (statuses) =>
              statuses.flatMap((raw) => {
                const counted = decodeCounted(raw)
                if (counted._tag === "None") return []
                const status = counted.value
                return [{
                  externalId: status.id,
                  likes: status.favourites_count ?? null,
                  reposts: status.reblogs_count ?? null,
                  replies: status.replies_count ?? null,
                  quotes: status.quotes_count ?? null,
                  views: null,
                  raw
                }]
              })
          ),
        accountCounts: (account) =>
          Effect.map(call(account.credentials, "/api/v1/accounts/verify_credentials", Schema.Unknown), (raw) => {
            const counted = Option.getOrElse(decodeAccountCounted(raw), () => ({} as typeof AccountCounted.Type))
            return {
              followers: counted.followers_count ?? null,
              following: counted.following_count ?? null,
              posts: counted.statuses_count ?? null,
              raw
            }
          })
      }
    }
    return provider
  }),
  dependencies: [MastodonClient.Default, MastodonMedia.Default]
}) {}
