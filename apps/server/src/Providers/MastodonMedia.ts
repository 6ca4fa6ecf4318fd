import { Context, Duration, Effect, Schedule, Schema } from "effect"
import type { CredentialsOf } from "./Credentials.js"
import { MastodonClient } from "./MastodonClient.js"
import { mastodonDefaultMediaLimits } from "./Rules.js"
import { type ContentProblem, type MediaFacts, type MediaLimits, ProviderError, type PublishMedia } from "./SocialProvider.js"

// `url` stays null while the server is still processing the file.
const MediaAttachment = Schema.Struct({
  id: Schema.String,
  url: Schema.optional(Schema.NullOr(Schema.String))
})

// Mastodon's own (app/models/media_attachment.rb), for servers that do not say, and Postline's types, which it all
// takes: Rules.ts's, which GET /v1/providers answers.
export const defaultMediaLimits: MediaLimits = mastodonDefaultMediaLimits

// Mastodon's megabytes are binary. A size is rounded up, so that one just over a limit does not read as the limit.
const megabytes = (bytes: number, round: (n: number) => number = Math.round) => `${round(bytes / 1024 / 1024 * 10) / 10} MB`

export const mediaProblems = (media: ReadonlyArray<MediaFacts>, limits: MediaLimits): ReadonlyArray<ContentProblem> => [
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

/** Media uploaded for a status: it may name them once the server has processed them. */
export class MastodonMedia extends Effect.Service<MastodonMedia>()("MastodonMedia", {
  effect: Effect.gen(function*() {
    const { call } = yield* MastodonClient

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

    return { upload } as const
  }),
  dependencies: [MastodonClient.Default]
}) {}
