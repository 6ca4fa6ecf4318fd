import { Config, Effect, Option } from "effect"
import { tmpdir } from "node:os"

const megabytes = 1024 * 1024

const positive = (name: string, unit: string, defaultValue: number) =>
  Config.integer(name).pipe(
    Config.withDefault(defaultValue),
    Config.validate({ message: `${name} must be a positive number of ${unit}`, validation: (n) => n > 0 })
  )

/** The media library's limits and addresses, read once. */
export class MediaSettings extends Effect.Service<MediaSettings>()("Assets/Settings", {
  effect: Effect.gen(function*() {
    const publicUrl = yield* Config.option(Config.url("PUBLIC_URL"))
    return {
      maxImageBytes: yield* positive("MEDIA_MAX_IMAGE_BYTES", "bytes", 20 * megabytes),
      maxVideoBytes: yield* positive("MEDIA_MAX_VIDEO_BYTES", "bytes", 300 * megabytes),
      /** Decoding an image takes about 4 bytes a pixel: this bounds what one upload may make the server hold. */
      maxImagePixels: yield* positive("MEDIA_MAX_IMAGE_PIXELS", "pixels", 50_000_000),
      /** How many uploaded images one process decodes and writes again at once; the others wait their turn. */
      processingConcurrency: yield* positive("MEDIA_PROCESSING_CONCURRENCY", "images", 2),
      /** What an organization may store, originals and thumbnails together. */
      quotaBytes: yield* positive("MEDIA_QUOTA_BYTES", "bytes", 5 * 1024 * megabytes),
      /** How long the URLs in an asset's answers work. */
      urlSeconds: yield* Config.integer("MEDIA_URL_SECONDS").pipe(
        Config.withDefault(3600),
        Config.validate({ message: "MEDIA_URL_SECONDS must be from 60 to 604800", validation: (n) => n >= 60 && n <= 604_800 })
      ),
      /** Where uploads are written while they are checked: a disk folder, not memory (a tmpfs would hold them in RAM). */
      workDir: yield* Config.string("MEDIA_TMP_DIR").pipe(Config.withDefault(tmpdir())),
      /** `<PUBLIC_URL>` without a trailing slash, which makes URLs absolute; null when it is not set. */
      base: Option.getOrNull(Option.map(publicUrl, (url) => url.href.replace(/\/+$/, "")))
    } as const
  })
}) {}
