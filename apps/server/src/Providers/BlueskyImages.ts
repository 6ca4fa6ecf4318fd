import type { Agent } from "@atproto/api"
import { Effect } from "effect"
import { providerRules } from "./Rules.js"
import { SharpModule } from "./SharpModule.js"
import { type ContentProblem, type MediaFacts, ProviderError } from "./SocialProvider.js"

/** app.bsky.embed.images takes images of at most 2,000,000 bytes. */
export const maxImageBytes = providerRules.bluesky.media.maxImageBytes

// Bluesky shows an image at most 2000 pixels on its longer side: a larger one is brought down to that first.
const maxSide = 2000
const qualities = [85, 70, 55]
// Each round that does not fit makes the image this much smaller; below minSide it is not worth sending.
const shrinkFactor = 0.75
const minSide = 200

/** An image as it is uploaded: the stored file itself, or a smaller copy in memory. */
export interface FittedImage {
  readonly data: Blob | Uint8Array
  readonly contentType: string
  readonly width: number | null
  readonly height: number | null
}

const failure = (category: "invalid_content" | "unknown", what: string) => (error: unknown) =>
  new ProviderError({
    provider: "bluesky",
    category,
    retryable: false,
    providerMessage: `${what}: ${error instanceof Error ? error.message : String(error)}`
  })

/**
 * The image as Bluesky takes it: the stored file when it is small enough; otherwise re-encoded (JPEG, or WebP
 * when it has transparency) at lower qualities, then smaller, keeping its aspect ratio, until it fits. An
 * animated GIF keeps its first frame, which is all Bluesky shows of one. The stored asset is never changed.
 */
export const fitImage = (blob: Blob, image: MediaFacts): Effect.Effect<FittedImage, ProviderError> =>
  blob.size <= maxImageBytes
    ? Effect.succeed({ data: blob, contentType: image.contentType, width: image.width, height: image.height })
    : Effect.gen(function*() {
      const { default: sharp } = yield* SharpModule.load
      const input = yield* Effect.tryPromise({
        try: () => blob.arrayBuffer(),
        catch: failure("unknown", "The image could not be read")
      })
      return yield* Effect.tryPromise({
        try: async () => {
          const { width = 0, height = 0, hasAlpha } = await sharp(input).metadata()
          for (let side = Math.min(Math.max(width, height), maxSide); side >= minSide; side = Math.floor(side * shrinkFactor)) {
            for (const quality of qualities) {
              const resized = sharp(input).resize({ width: side, height: side, fit: "inside", withoutEnlargement: true })
              const { data, info } = await (hasAlpha ? resized.webp({ quality }) : resized.jpeg({ quality }))
                .toBuffer({ resolveWithObject: true })
              if (data.byteLength <= maxImageBytes) {
                return { data, contentType: hasAlpha ? "image/webp" : "image/jpeg", width: info.width, height: info.height }
              }
            }
          }
          throw new Error(`it stays over ${maxImageBytes} bytes even at ${minSide} pixels`)
        },
        catch: failure("invalid_content", "The image could not be made small enough for Bluesky")
      })
    })

// app.bsky.embed.images: at most 4 images; these are the types Postline stores and Bluesky shows.
const maxImages = providerRules.bluesky.media.maxItems
const imageTypes = new Set<string>(providerRules.bluesky.media.contentTypes)

export const mediaProblems = (media: ReadonlyArray<MediaFacts>): ReadonlyArray<ContentProblem> => {
  const videos = media.filter((medium) => medium.kind === "video").length
  const images = media.length - videos
  return [
    ...(videos > 0
      ? [`Postline does not send videos to Bluesky yet; this post has ${videos === 1 ? "a video" : `${videos} videos`}`]
      : []),
    ...(images > maxImages ? [`Bluesky takes at most ${maxImages} images; this post has ${images}`] : []),
    ...media.flatMap((medium, index) =>
      medium.kind === "image" && !imageTypes.has(medium.contentType)
        ? [`Image ${index + 1} is ${medium.contentType}, which Bluesky does not take`]
        : []
    )
  ].map((message) => ({ code: "media", message }))
}

/** Uploads each image in turn, as the post's app.bsky.embed.images embed. */
export const embedImages = async (agent: Agent, images: ReadonlyArray<readonly [FittedImage, MediaFacts]>) => {
  const embedded = []
  for (const [image, { altText }] of images) {
    const { data } = await agent.uploadBlob(image.data, { encoding: image.contentType })
    embedded.push({
      image: data.blob,
      alt: altText ?? "",
      ...(image.width && image.height ? { aspectRatio: { width: image.width, height: image.height } } : {})
    })
  }
  return { $type: "app.bsky.embed.images" as const, images: embedded }
}
