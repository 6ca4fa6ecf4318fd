import type { AssetKind } from "@postline/domain"
import { Data, Effect } from "effect"
import { fileTypeFromBuffer } from "file-type"
import { readFile, stat } from "node:fs/promises"
import { HeicDecodeModule, SharpModule } from "./Images.js"

/** How many leading bytes tell a file's type. */
export const sniffBytes = 4100

/** What the server stores, by the type its bytes show: anything else is refused. */
const accepted: Readonly<Record<string, { readonly kind: AssetKind; readonly extension: string }>> = {
  "image/jpeg": { kind: "image", extension: "jpg" },
  "image/png": { kind: "image", extension: "png" },
  "image/webp": { kind: "image", extension: "webp" },
  "image/gif": { kind: "image", extension: "gif" },
  "image/heic": { kind: "image", extension: "heic" },
  "image/heif": { kind: "image", extension: "heic" },
  "video/mp4": { kind: "video", extension: "mp4" }
}

export interface Sniffed {
  readonly mime: string
  readonly kind: AssetKind
}

/** The type the file's first bytes show, when it is one the server takes; none for anything else. */
export const sniff = (head: Uint8Array) =>
  Effect.promise(() => fileTypeFromBuffer(head)).pipe(
    Effect.map((found): Sniffed | undefined => {
      const entry = found === undefined ? undefined : accepted[found.mime]
      return found === undefined || entry === undefined ? undefined : { mime: found.mime, kind: entry.kind }
    })
  )

/** The file is not what it seemed: its image data cannot be read, or it is larger than the server decodes. */
export class ImageRefused extends Data.TaggedError("ImageRefused")<{ readonly reason: "unreadable" | "too_many_pixels" }> {}

export interface Prepared {
  /** The local file to store, and what it is. */
  readonly path: string
  readonly contentType: string
  readonly extension: string
  readonly size: number
  readonly width: number | null
  readonly height: number | null
  /** A WebP thumbnail beside it, for images. */
  readonly thumbnailPath: string | null
  readonly thumbnailSize: number
}

const thumbnailSide = 320

/**
 * What is stored for an upload at `input`: an image turned upright and written again without its metadata
 * (EXIF, GPS, XMP: sharp keeps none unless asked), HEIC as JPEG, GIF as it came (it has no EXIF, and its
 * frames would not survive a rewrite); a video as it came. `maxPixels` bounds what decoding may hold.
 */
export const prepare = (input: string, sniffed: Sniffed, maxPixels: number): Effect.Effect<Prepared, ImageRefused> =>
  Effect.gen(function*() {
    if (sniffed.kind === "video") {
      const { size } = yield* Effect.promise(() => stat(input))
      return { path: input, contentType: sniffed.mime, extension: "mp4", size, width: null, height: null, thumbnailPath: null, thumbnailSize: 0 }
    }
    const { default: sharp } = yield* SharpModule.load
    const source = sniffed.mime === "image/heic" || sniffed.mime === "image/heif"
      ? yield* decodeHeic(input, maxPixels)
      : sharp(input, { limitInputPixels: maxPixels, animated: sniffed.mime === "image/gif", failOn: "error" })
    const metadata = yield* Effect.tryPromise({ try: () => source.metadata(), catch: refusalOf })
    const output = `${input}.stored`
    const format = sniffed.mime === "image/png" ? "png" : sniffed.mime === "image/webp" ? "webp" : sniffed.mime === "image/gif" ? "gif" : "jpg"
    const written = sniffed.mime === "image/gif"
      ? {
        path: input,
        size: (yield* Effect.promise(() => stat(input))).size,
        width: metadata.width ?? null,
        height: metadata.pageHeight ?? metadata.height ?? null
      }
      : yield* Effect.tryPromise({
        try: async () => {
          const pipeline = source.clone().rotate()
          const info = await (format === "png"
            ? pipeline.png()
            : format === "webp"
            ? pipeline.webp({ quality: 90 })
            : pipeline.jpeg({ quality: 90, mozjpeg: true })).toFile(output)
          return { path: output, size: info.size, width: info.width, height: info.height }
        },
        catch: refusalOf
      })
    const thumbnailPath = `${input}.thumbnail.webp`
    const thumbnail = yield* Effect.tryPromise({
      try: () =>
        sharp(written.path, { limitInputPixels: maxPixels })
          .rotate()
          .resize(thumbnailSide, thumbnailSide, { fit: "inside", withoutEnlargement: true })
          .webp({ quality: 80 })
          .toFile(thumbnailPath),
      catch: refusalOf
    })
    return {
      path: written.path,
      contentType: format === "jpg" ? "image/jpeg" : `image/${format}`,
      extension: format,
      size: written.size,
      width: written.width,
      height: written.height,
      thumbnailPath,
      thumbnailSize: thumbnail.size
    }
  })

const refusalOf = (cause: unknown) =>
  new ImageRefused({ reason: String((cause as Error)?.message ?? cause).includes("pixel limit") ? "too_many_pixels" : "unreadable" })

/**
 * A HEIC decoded to pixels (sharp's own build reads no HEIC), as a sharp image of them. Its size is read from
 * its header first: a small file may claim a huge image, which is refused before a pixel is decoded.
 */
const decodeHeic = (input: string, maxPixels: number) =>
  Effect.gen(function*() {
    const { default: decode } = yield* HeicDecodeModule.load
    const { default: sharp } = yield* SharpModule.load
    const buffer = yield* Effect.promise(() => readFile(input))
    const images = yield* Effect.acquireRelease(
      Effect.tryPromise({ try: () => decode.all({ buffer }), catch: refusalOf }),
      (images) => Effect.sync(() => images.dispose())
    )
    const first = images[0]
    if (first === undefined) return yield* new ImageRefused({ reason: "unreadable" })
    if (first.width * first.height > maxPixels) return yield* new ImageRefused({ reason: "too_many_pixels" })
    const image = yield* Effect.tryPromise({ try: () => first.decode(), catch: refusalOf })
    return sharp(Buffer.from(image.data.buffer, image.data.byteOffset, image.data.byteLength), {
      raw: { width: image.width, height: image.height, channels: 4 }
    })
  }).pipe(Effect.scoped)
