import { Effect } from "effect"
import { createHash, randomBytes, randomUUID } from "node:crypto"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { openAsBlob } from "node:fs"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import sharp from "sharp"
import type { MediaFacts, PublishMedia } from "../../src/Providers/SocialProvider.js"

export interface ImageOptions {
  readonly width: number
  readonly height: number
  readonly format?: "jpeg" | "png" | "webp" | "gif"
  /** Random pixels, which no format compresses: a 1200×1200 PNG of them is over 4 MB. */
  readonly noise?: boolean
  /** An alpha channel (random too, with `noise`). */
  readonly alpha?: boolean
  readonly altText?: string | null
}

export interface MediaFixtures {
  /** An image written with sharp into the scope's folder, as the provider is given it. */
  readonly image: (options: ImageOptions) => Effect.Effect<PublishMedia>
  /** Bytes standing in for an MP4 (nothing here decodes them), of the size asked. */
  readonly video: (options: { readonly size: number; readonly altText?: string | null }) => Effect.Effect<PublishMedia>
}

const publishMedia = (
  path: string,
  bytes: Buffer,
  facts: Pick<PublishMedia, "kind" | "contentType" | "width" | "height" | "altText">
): PublishMedia => {
  const assetId = randomUUID()
  return {
    ...facts,
    assetId,
    size: bytes.byteLength,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    url: `https://media.postline.test/assets/${assetId}`,
    urlExpiresAt: new Date(Date.now() + 24 * 3600_000).toISOString(),
    // A file-backed Blob, as the storage hands it over: read when sent, not before.
    open: Effect.promise(() => openAsBlob(path, { type: facts.contentType }))
  }
}

/** Media files in a temporary folder removed with the scope. */
export const makeMediaFixtures = Effect.gen(function*() {
  const folder = yield* Effect.acquireRelease(
    Effect.promise(() => mkdtemp(Path.join(tmpdir(), "postline-media-"))),
    (folder) => Effect.promise(() => rm(folder, { recursive: true, force: true }))
  )
  const write = (name: string, bytes: Buffer) => Effect.promise(() => writeFile(Path.join(folder, name), bytes))

  const fixtures: MediaFixtures = {
    image: ({ alpha = false, altText = null, format = "png", height, noise = false, width }) =>
      Effect.gen(function*() {
        const channels = alpha ? 4 : 3
        const pixels = noise
          ? sharp(randomBytes(width * height * channels), { raw: { width, height, channels } })
          : sharp({ create: { width, height, channels, background: { r: 40, g: 120, b: 200, alpha: 0.5 } } })
        const bytes = yield* Effect.promise(() => pixels.toFormat(format).toBuffer())
        const name = `${randomUUID()}.${format}`
        yield* write(name, bytes)
        return publishMedia(Path.join(folder, name), bytes, { kind: "image", contentType: `image/${format}`, width, height, altText })
      }),
    video: ({ altText = null, size }) =>
      Effect.gen(function*() {
        const bytes = randomBytes(size)
        const name = `${randomUUID()}.mp4`
        yield* write(name, bytes)
        return publishMedia(Path.join(folder, name), bytes, { kind: "video", contentType: "video/mp4", width: 1280, height: 720, altText })
      })
  }
  return fixtures
})

/** What a provider checks of an image before sending it (validateMedia): a 1600×900 JPEG of 500 kB unless told. */
export const imageFacts = (facts: Partial<MediaFacts> = {}): MediaFacts => ({
  kind: "image",
  contentType: "image/jpeg",
  size: 500_000,
  width: 1600,
  height: 900,
  altText: null,
  ...facts
})
