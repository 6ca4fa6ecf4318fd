import { Context, Duration, Effect, Option, Redacted, Schedule, Schema } from "effect"
import { Outbound } from "../Outbound/Outbound.js"
import type { CredentialsOf } from "./Credentials.js"
import { fromOutbound, fromStatus, shortMessage } from "./Errors.js"
import {
  type ContentLimits,
  type ContentProblem,
  type MediaFacts,
  type MediaLimits,
  ProviderError,
  type PublishMedia,
  type SocialProvider
} from "./SocialProvider.js"
import { lengthProblems, mastodonLength } from "./TextLength.js"

// The parts of Mastodon's answers that Postline reads (docs.joinmastodon.org/entities).
const Account = Schema.Struct({
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

// `url` stays null while the server is still processing the file.
const MediaAttachment = Schema.Struct({
  id: Schema.String,
  url: Schema.optional(Schema.NullOr(Schema.String))
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

const ErrorBody = Schema.Struct({ error: Schema.String })
const decodeErrorBody = Schema.decodeUnknownOption(Schema.parseJson(ErrorBody))

// Mastodon's own (app/models/media_attachment.rb), for servers that do not say, and Postline's types, which it all takes.
const defaultMediaLimits: MediaLimits = {
  maxAttachments: 4,
  contentTypes: ["image/jpeg", "image/png", "image/webp", "image/gif", "video/mp4"],
  maxImageBytes: 16 * 1024 * 1024,
  maxVideoBytes: 99 * 1024 * 1024,
  maxImagePixels: 7680 * 4320,
  maxVideoPixels: 3840 * 2160,
  maxAltTextLength: 1500
}

const defaultLimits: ContentLimits = { maxLength: 500, urlLength: 23, media: defaultMediaLimits }

// Mastodon's megabytes are binary. A size is rounded up, so that one just over a limit does not read as the limit.
const megabytes = (bytes: number, round: (n: number) => number = Math.round) => `${round(bytes / 1024 / 1024 * 10) / 10} MB`

const mediaProblems = (media: ReadonlyArray<MediaFacts>, limits: MediaLimits): ReadonlyArray<ContentProblem> => [
  ...(media.length > limits.maxAttachments
    ? [`This Mastodon server takes at most ${limits.maxAttachments} attachments; this post has ${media.length}`]
    : []),
  // Mastodon refuses a video beside anything else (PostStatusService's images_and_video).
  ...(media.length > 1 && media.some((medium) => medium.kind === "video")
    ? ["Mastodon takes a video only on its own; this post has a video and other media"]
    : []),
  ...media.flatMap(({ altText, contentType, height, kind, size, width }, index) => {
    const name = `${kind === "image" ? "Image" : "Video"} ${index + 1}`
    const maxBytes = kind === "image" ? limits.maxImageBytes : limits.maxVideoBytes
    const maxPixels = kind === "image" ? limits.maxImagePixels : limits.maxVideoPixels
    // Mastodon counts a description's characters as Ruby does: in code points.
    const altLength = altText === null ? 0 : [...altText].length
    return [
      ...(limits.contentTypes.includes(contentType) ? [] : [`${name} is ${contentType}, which this Mastodon server does not take`]),
      ...(size > maxBytes ? [`${name} is ${megabytes(size, Math.ceil)}; this Mastodon server takes ${kind}s up to ${megabytes(maxBytes)}`] : []),
      ...(width !== null && height !== null && width * height > maxPixels
        ? [`${name} is ${width}×${height} pixels; this Mastodon server takes ${kind}s of at most ${maxPixels} pixels`]
        : []),
      ...(altLength > limits.maxAltTextLength
        ? [`${name}'s alt text is ${altLength} characters long; this Mastodon server takes ${limits.maxAltTextLength}`]
        : [])
    ]
  })
].map((message) => ({ code: "media", message }))

/**
 * How long an upload may stay in processing (a video, a large image) before the publish gives up with a
 * `transient` error, for a later attempt to upload again.
 */
export class MastodonMediaProcessing extends Context.Reference<MastodonMediaProcessing>()("MastodonMediaProcessing", {
  defaultValue: () => ({ timeout: Duration.seconds(60) })
}) {}

// From a quarter second up, at most 5 s apart.
const pollingSchedule = Schedule.exponential("250 millis", 2).pipe(Schedule.union(Schedule.spaced("5 seconds")))

/**
 * Mastodon, and servers that speak its API, over plain HTTP through the guarded outbound client: a few
 * documented calls do not need a client library, and this way every call is checked the same way. Media
 * are uploaded first, in the post's order, and the status names them.
 */
export class Mastodon extends Effect.Service<Mastodon>()("Mastodon", {
  effect: Effect.gen(function*() {
    const outbound = yield* Outbound

    const call = <A, I>(
      credentials: CredentialsOf<"mastodon">,
      path: string,
      schema: Schema.Schema<A, I>,
      init: { readonly method?: "GET" | "POST"; readonly headers?: Record<string, string>; readonly body?: string | FormData } = {}
    ) =>
      Effect.gen(function*() {
        const response = yield* outbound.request(new URL(path, credentials.instanceUrl).toString(), {
          ...init,
          headers: {
            accept: "application/json",
            authorization: `Bearer ${Redacted.value(credentials.accessToken)}`,
            ...init.headers
          }
        }).pipe(Effect.mapError((error) => fromOutbound("mastodon", error)))
        const text = new TextDecoder().decode(response.body)
        if (response.status < 200 || response.status > 299) {
          return yield* fromStatus({
            provider: "mastodon",
            status: response.status,
            header: (name) => response.headers.get(name),
            providerMessage: decodeErrorBody(text).pipe((body) =>
              body._tag === "Some" ? body.value.error : shortMessage(text, response.statusText)
            ),
            clientError: response.status === 400 || response.status === 413 || response.status === 422
              ? "invalid_content"
              : "unknown"
          })
        }
        return yield* Schema.decodeUnknown(Schema.parseJson(schema))(text).pipe(
          Effect.mapError(() =>
            new ProviderError({
              provider: "mastodon",
              category: "unknown",
              retryable: false,
              providerStatus: response.status,
              providerMessage: `Unexpected answer to ${path}: is ${new URL(credentials.instanceUrl).host} a Mastodon server?`
            })
          )
        )
      })

    /** The attachment's id, once the server has processed it: a status may name it only then. */
    const upload = (credentials: CredentialsOf<"mastodon">, medium: PublishMedia) =>
      Effect.gen(function*() {
        const form = new FormData()
        // Typed and named as a browser sends a file: Mastodon checks the type against both.
        const file = new Blob([yield* medium.open], { type: medium.contentType })
        form.append("file", file, `${medium.assetId}.${medium.contentType.split("/")[1]}`)
        if (medium.altText !== null) form.append("description", medium.altText)
        const attachment = yield* call(credentials, "/api/v2/media", MediaAttachment, { method: "POST", body: form })
        if (attachment.url) return attachment.id
        // 202: processing goes on in the background; the attachment answers 206 until it is done.
        const { timeout } = yield* MastodonMediaProcessing
        return yield* call(credentials, `/api/v1/media/${encodeURIComponent(attachment.id)}`, MediaAttachment).pipe(
          Effect.repeat({ schedule: pollingSchedule, until: (polled) => Boolean(polled.url) }),
          Effect.timeoutFail({
            duration: timeout,
            onTimeout: () =>
              new ProviderError({
                provider: "mastodon",
                category: "transient",
                retryable: true,
                providerMessage: `The server was still processing the ${medium.kind} ${medium.assetId} after ${Duration.format(timeout)}`
              })
          }),
          Effect.as(attachment.id)
        )
      }).pipe(Effect.scoped)

    const provider: SocialProvider<"mastodon"> = {
      name: "mastodon",
      defaultLimits,
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
            body: JSON.stringify({ status: post.text, ...(mediaIds.length > 0 ? { media_ids: mediaIds } : {}) })
          })
          return { externalId: status.id, url: status.url ?? status.uri }
        }),
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
  })
}) {}
