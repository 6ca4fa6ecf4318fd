import { Context, Duration, Effect, type Redacted, Schema } from "effect"
import { providerRules } from "./Rules.js"
import { type ContentProblem, type MediaFacts, ProviderError, type PublishMedia } from "./SocialProvider.js"
import { XClient } from "./XClient.js"

// docs.x.com/x-api/media/initialize-media-upload (and finalize, get-media-upload-status): every answer is the
// upload's state; `processing_info` only while X still processes it (a video, a GIF).
const ProcessingInfo = Schema.Struct({
  state: Schema.Literal("pending", "in_progress", "succeeded", "failed"),
  check_after_secs: Schema.optional(Schema.Number),
  error: Schema.optional(Schema.Struct({ message: Schema.optional(Schema.String) }))
})
type ProcessingInfo = typeof ProcessingInfo.Type

const Upload = Schema.Struct({
  data: Schema.Struct({ id: Schema.String, processing_info: Schema.optional(ProcessingInfo) })
})

const rules = providerRules.x.media
const megabytes = (bytes: number, round: (n: number) => number = Math.round) => `${round(bytes / 1024 / 1024 * 10) / 10} MB`

// An animated GIF may be as large as this (docs.x.com/x-api/media/introduction); a still image 5 MB.
const gifBytes = 15 * 1024 * 1024

const isAlone = (medium: MediaFacts) => medium.kind === "video" || medium.contentType === "image/gif"

/** What X refuses (docs.x.com/x-api/media/quickstart/best-practices): up to 4 photos, or 1 animated GIF, or 1 video. */
export const xMediaProblems = (media: ReadonlyArray<MediaFacts>): ReadonlyArray<ContentProblem> => [
  ...(media.length > rules.maxItems ? [`X takes at most ${rules.maxItems} images in a post; this post has ${media.length}`] : []),
  ...(media.length > 1 && media.some(isAlone) ? ["X takes a video or an animated GIF only on its own; this post has other media besides"] : []),
  ...media.flatMap(({ altText, contentType, kind, size }, index) => {
    const name = `${kind === "image" ? "Image" : "Video"} ${index + 1}`
    const maxBytes = contentType === "image/gif" ? gifBytes : kind === "image" ? rules.maxImageBytes : rules.maxVideoBytes
    const altLength = altText === null ? 0 : [...altText].length
    return [
      ...((rules.contentTypes as ReadonlyArray<string>).includes(contentType) ? [] : [`${name} is ${contentType}, which X does not take`]),
      ...(size > maxBytes ? [`${name} is ${megabytes(size, Math.ceil)}; X takes ${contentType === "image/gif" ? "GIFs" : `${kind}s`} up to ${megabytes(maxBytes)}`] : []),
      ...(altLength > rules.maxAltTextLength ? [`${name}'s alt text is ${altLength} characters long; X takes ${rules.maxAltTextLength}`] : [])
    ]
  })
].map((message) => ({ code: "media", message }))

// Its category sets X's limits: a video as `amplify_video`, which takes up to 512 MB (the introduction's table).
const categoryOf = (medium: MediaFacts) =>
  medium.kind === "video" ? "amplify_video" : medium.contentType === "image/gif" ? "tweet_gif" : "tweet_image"

// Well under X's largest segment; at most 1000 segments (segment_index 0 to 999) take 512 MB in 4 MiB pieces.
const chunkBytes = 4 * 1024 * 1024

/** How long X may process a medium (a video) before the publish gives up with a `transient` error, to upload again later. */
export class XMediaProcessing extends Context.Reference<XMediaProcessing>()("XMediaProcessing", {
  defaultValue: () => ({ timeout: Duration.minutes(2) })
}) {}

/** Media uploaded for a post, in X's chunked way: initialize, append each segment, finalize, and wait while X processes it. */
export class XMedia extends Effect.Service<XMedia>()("XMedia", {
  effect: Effect.gen(function*() {
    const { call } = yield* XClient

    // As long as X asks between checks (`check_after_secs`), at least a quarter second and at most 10 s.
    const processed = (accessToken: Redacted.Redacted<string>, id: string, info: ProcessingInfo | undefined): Effect.Effect<void, ProviderError> => {
      if (info === undefined || info.state === "succeeded") return Effect.void
      if (info.state === "failed") {
        return Effect.fail(new ProviderError({
          provider: "x",
          category: "invalid_content",
          retryable: false,
          providerMessage: `X could not process the medium: ${info.error?.message ?? "no reason given"}`
        }))
      }
      const wait = Duration.millis(Math.min(10_000, Math.max(250, (info.check_after_secs ?? 1) * 1000)))
      return Effect.sleep(wait).pipe(
        Effect.zipRight(call(accessToken, `/2/media/upload?command=STATUS&media_id=${encodeURIComponent(id)}`, Upload)),
        Effect.flatMap((status) => processed(accessToken, id, status.data.processing_info))
      )
    }

    /** The medium's id, once X has it whole and processed, its alt text set: a post may name it then. */
    const upload = (accessToken: Redacted.Redacted<string>, medium: PublishMedia) =>
      Effect.gen(function*() {
        const file = yield* medium.open
        const { data } = yield* call(accessToken, "/2/media/upload/initialize", Upload, {
          method: "POST",
          json: { media_type: medium.contentType, total_bytes: file.size, media_category: categoryOf(medium) }
        })
        const path = `/2/media/upload/${encodeURIComponent(data.id)}`
        const segments = Math.max(1, Math.ceil(file.size / chunkBytes))
        yield* Effect.forEach(Array.from({ length: segments }, (_, index) => index), (index) => {
          const form = new FormData()
          form.append("segment_index", String(index))
          form.append("media", file.slice(index * chunkBytes, (index + 1) * chunkBytes, "application/octet-stream"), "segment")
          return call(accessToken, `${path}/append`, Schema.Unknown, { method: "POST", form })
        }, { discard: true })
        const finalized = yield* call(accessToken, `${path}/finalize`, Upload, { method: "POST" })
        const { timeout } = yield* XMediaProcessing
        yield* processed(accessToken, data.id, finalized.data.processing_info).pipe(
          Effect.timeoutFail({
            duration: timeout,
            onTimeout: () =>
              new ProviderError({
                provider: "x",
                category: "transient",
                retryable: true,
                providerMessage: `X was still processing the ${medium.kind} ${medium.assetId} after ${Duration.format(timeout)}`
              })
          })
        )
        // docs.x.com/x-api/media/create-media-metadata
        if (medium.altText !== null && medium.altText !== "") {
          yield* call(accessToken, "/2/media/metadata", Schema.Unknown, {
            method: "POST",
            json: { id: data.id, metadata: { alt_text: { text: medium.altText } } }
          })
        }
        return data.id
      }).pipe(Effect.scoped)

    return { upload } as const
  }),
  dependencies: [XClient.Default]
}) {}
