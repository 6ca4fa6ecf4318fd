import { Config, Effect, Option } from "effect"
import { tmpdir } from "node:os"
import { processWorkDir } from "./ProcessFolder.js"

const megabytes = 1024 * 1024

const positive = (name: string, unit: string, defaultValue: number) =>
  Config.integer(name).pipe(
    Config.withDefault(defaultValue),
    Config.validate({ message: `${name} must be a positive number of ${unit}`, validation: (n) => n > 0 })
  )

/** The media library's limits and addresses, read once, and this process's folder for the files it checks. */
export class MediaSettings extends Effect.Service<MediaSettings>()("Assets/Settings", {
  scoped: Effect.gen(function*() {
    const publicUrl = yield* Config.option(Config.url("PUBLIC_URL"))
    /** How long what a process holds outlives it when it dies: its claims on presigned uploads, its temporary files. */
    const leaseSeconds = yield* positive("MEDIA_LEASE_SECONDS", "seconds", 60)
    return {
      maxImageBytes: yield* positive("MEDIA_MAX_IMAGE_BYTES", "bytes", 20 * megabytes),
      maxVideoBytes: yield* positive("MEDIA_MAX_VIDEO_BYTES", "bytes", 300 * megabytes),
      /**
       * The most pixels an image may have, and the most decoding at once: images are decoded in processes of
       * their own (Assets/ImageJobs.ts), which take up to about 7 bytes a pixel for HEIC, 3.5 for a progressive
       * JPEG, 1 for a PNG (bench S11), besides about 90 MB each.
       */
      maxImagePixels: yield* positive("MEDIA_MAX_IMAGE_PIXELS", "pixels", 50_000_000),
      /** How many image processes may run at once (each waits for its pixels to fit); the others wait their turn. */
      processingConcurrency: yield* positive("MEDIA_PROCESSING_CONCURRENCY", "images", 2),
      /** What an organization may store, originals and thumbnails together. */
      quotaBytes: yield* positive("MEDIA_QUOTA_BYTES", "bytes", 5 * 1024 * megabytes),
      /** How long the URLs in an asset's answers work. */
      urlSeconds: yield* Config.integer("MEDIA_URL_SECONDS").pipe(
        Config.withDefault(3600),
        Config.validate({ message: "MEDIA_URL_SECONDS must be from 60 to 604800", validation: (n) => n >= 60 && n <= 604_800 })
      ),
      leaseSeconds,
      /**
       * Where uploads are written while they are checked: this process's own folder under MEDIA_TMP_DIR, on disk, not
       * in memory (a tmpfs would hold them in RAM).
       */
      workDir: yield* processWorkDir(yield* Config.string("MEDIA_TMP_DIR").pipe(Config.withDefault(tmpdir())), leaseSeconds),
      /** `<PUBLIC_URL>` without a trailing slash, which makes URLs absolute; null when it is not set. */
      base: Option.getOrNull(Option.map(publicUrl, (url) => url.href.replace(/\/+$/, "")))
    } as const
  })
}) {}
