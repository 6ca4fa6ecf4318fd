import { Effect, Option, Schema } from "effect"
import { defaultContentLimits } from "./Rules.js"
import type { ContentLimits, SocialProvider } from "./SocialProvider.js"
import { XClient } from "./XClient.js"
import { XMedia, xMediaProblems } from "./XMedia.js"
import { xTextProblems } from "./XText.js"

// The parts of X's answers that Postline reads (docs.x.com/x-api/users/user-lookup-me,
// /x-api/posts/create-or-edit-post, /x-api/posts/manage-tweets/introduction, /x-api/posts/lookup/integrate).
const Me = Schema.Struct({
  data: Schema.Struct({
    id: Schema.String,
    username: Schema.String,
    name: Schema.String,
    profile_image_url: Schema.optional(Schema.String)
  })
})

const Created = Schema.Struct({ data: Schema.Struct({ id: Schema.String }) })

// A read of several posts answers those it has in `data` (absent when none) and the others in `errors`.
const Posts = Schema.Struct({ data: Schema.optional(Schema.Array(Schema.Unknown)) })

const Counted = Schema.Struct({
  id: Schema.String,
  public_metrics: Schema.optional(Schema.Struct({
    like_count: Schema.optional(Schema.Int),
    retweet_count: Schema.optional(Schema.Int),
    reply_count: Schema.optional(Schema.Int),
    quote_count: Schema.optional(Schema.Int),
    impression_count: Schema.optional(Schema.Int)
  }))
})

const AccountCounted = Schema.Struct({
  data: Schema.Struct({
    public_metrics: Schema.optional(Schema.Struct({
      followers_count: Schema.optional(Schema.Int),
      following_count: Schema.optional(Schema.Int),
      tweet_count: Schema.optional(Schema.Int)
    }))
  })
})

const decodeCounted = Schema.decodeUnknownOption(Counted)
const decodeAccountCounted = Schema.decodeUnknownOption(AccountCounted)

// GET /2/tweets takes up to 100 ids.
const postsPerRead = 100

const defaultLimits: ContentLimits = defaultContentLimits.x

// The status URL that needs no username: the account's handle may change, and credentials keep only its id.
const postUrl = (id: string) => `https://x.com/i/web/status/${id}`

/**
 * X, through its API v2 with the account's OAuth 2.0 token (XOAuth.ts renews it). Media are uploaded first, in
 * the post's order (XMedia.ts), and the post names them; a thread is a chain of replies to the account's own posts.
 * X has no idempotency key: a repeat of a post it took is refused as duplicate content (`invalid_content`).
 */
export class X extends Effect.Service<X>()("X", {
  effect: Effect.gen(function*() {
    const { call } = yield* XClient
    const { upload } = yield* XMedia

    const provider: SocialProvider<"x"> = {
      name: "x",
      defaultLimits,
      threads: "replies",
      verify: (credentials) =>
        Effect.map(
          call(credentials.accessToken, "/2/users/me?user.fields=profile_image_url,username,name", Me),
          ({ data }) => ({
            networkUserId: data.id,
            handle: `@${data.username}`,
            displayName: data.name === "" ? null : data.name,
            avatarUrl: data.profile_image_url ?? null,
            profileUrl: `https://x.com/${data.username}`,
            limits: defaultLimits
          })
        ),
      publish: (account, post) =>
        Effect.gen(function*() {
          const mediaIds = yield* Effect.forEach(post.media, (medium) => upload(account.credentials.accessToken, medium))
          const created = yield* call(account.credentials.accessToken, "/2/tweets", Created, {
            method: "POST",
            json: {
              text: post.text,
              ...(mediaIds.length > 0 ? { media: { media_ids: mediaIds } } : {}),
              ...(post.replyTo ? { reply: { in_reply_to_tweet_id: post.replyTo.parent.externalId } } : {})
            }
          })
          return { externalId: created.data.id, url: postUrl(created.data.id) }
        }),
      // A post X no longer has (404) was taken down already.
      remove: (account, { parts }) =>
        Effect.forEach(parts, (part) =>
          call(account.credentials.accessToken, `/2/tweets/${encodeURIComponent(part.externalId)}`, Schema.Unknown, {
            method: "DELETE"
          }).pipe(Effect.catchIf((error) => error.providerStatus === 404, () => Effect.void)), { discard: true }),
      validate: (text, limits = defaultLimits) => xTextProblems(text, limits),
      // X's limits are the same for every account.
      validateMedia: (media) => xMediaProblems(media),
      analytics: {
        batchSize: postsPerRead,
        engagement: (account, externalIds) =>
          Effect.map(
            call(
              account.credentials.accessToken,
              `/2/tweets?ids=${externalIds.map(encodeURIComponent).join(",")}&tweet.fields=public_metrics`,
              Posts
            ),
            ({ data = [] }) =>
              data.flatMap((raw) => {
                const counted = decodeCounted(raw)
                if (Option.isNone(counted)) return []
                const { id, public_metrics: metrics } = counted.value
                return [{
                  externalId: id,
                  likes: metrics?.like_count ?? null,
                  reposts: metrics?.retweet_count ?? null,
                  replies: metrics?.reply_count ?? null,
                  quotes: metrics?.quote_count ?? null,
                  views: metrics?.impression_count ?? null,
                  raw
                }]
              })
          ),
        accountCounts: (account) =>
          Effect.map(call(account.credentials.accessToken, "/2/users/me?user.fields=public_metrics", Schema.Unknown), (raw) => {
            const metrics = Option.getOrUndefined(decodeAccountCounted(raw))?.data.public_metrics
            return {
              followers: metrics?.followers_count ?? null,
              following: metrics?.following_count ?? null,
              posts: metrics?.tweet_count ?? null,
              raw
            }
          })
      }
    }
    return provider
  }),
  dependencies: [XClient.Default, XMedia.Default]
}) {}
