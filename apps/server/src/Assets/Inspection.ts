import type { AssetKind } from "@postline/domain"
import { Effect } from "effect"
import { fileTypeFromBuffer } from "file-type"
import { stat } from "node:fs/promises"
import type { ImageJobs, ImageRefused, Prepared } from "./ImageJobs.js"

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

/**
 * What is stored for an upload at `input`: an image turned upright and written again without its metadata
 * (EXIF, GPS, XMP: sharp keeps none unless asked), HEIC as JPEG, GIF as it came, each with a thumbnail, by an
 * image job (ImageJob.ts, in a process of its own); a video as it came.
 */
export const prepare = (input: string, sniffed: Sniffed, images: ImageJobs): Effect.Effect<Prepared, ImageRefused> =>
  sniffed.kind === "video"
    ? Effect.map(Effect.promise(() => stat(input)), ({ size }) => ({
      path: input,
      contentType: sniffed.mime,
      extension: "mp4",
      size,
      width: null,
      height: null,
      thumbnailPath: null,
      thumbnailSize: 0
    }))
    : images({ input, mime: sniffed.mime, output: `${input}.stored`, thumbnail: `${input}.thumbnail.webp` })
