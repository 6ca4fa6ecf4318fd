import { Config, ConfigError, Effect, Layer, Option } from "effect"
import * as Path from "node:path"
import { lazyModule } from "../LazyModule.js"
import { layerFileStorage } from "./FileStorage.js"
import type { S3Settings } from "./S3Storage.js"
import type { MediaStorage } from "./Storage.js"

// The S3 client is big: it is loaded only when a bucket is configured.
export const S3StorageModule = lazyModule("./S3Storage.js", () => import("./S3Storage.js"), { layerS3Storage: "function" })

const s3Settings = (bucket: string) =>
  Effect.gen(function*() {
    const endpoint = yield* Config.option(Config.string("S3_ENDPOINT"))
    const accessKeyId = yield* Config.option(Config.redacted("S3_ACCESS_KEY_ID"))
    const secretAccessKey = yield* Config.option(Config.redacted("S3_SECRET_ACCESS_KEY"))
    if (Option.isNone(accessKeyId) || Option.isNone(secretAccessKey)) {
      const missing = Option.isNone(accessKeyId) ? "S3_ACCESS_KEY_ID" : "S3_SECRET_ACCESS_KEY"
      return yield* Effect.fail(ConfigError.MissingData(
        [missing],
        "S3_BUCKET is set, so S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set too"
      ))
    }
    return {
      bucket,
      endpoint: Option.getOrUndefined(endpoint),
      region: yield* Config.string("S3_REGION").pipe(Config.withDefault("us-east-1")),
      accessKeyId: accessKeyId.value,
      secretAccessKey: secretAccessKey.value,
      // Servers other than AWS mostly serve only path-style URLs.
      forcePathStyle: yield* Config.boolean("S3_FORCE_PATH_STYLE").pipe(Config.withDefault(Option.isSome(endpoint)))
    } satisfies S3Settings
  })

/**
 * Where assets' bytes live, read once at the edge: the bucket `S3_BUCKET` when it is set (on AWS, or on the
 * S3-compatible server at `S3_ENDPOINT`), else the folder `MEDIA_DIR`, by default `DATA_DIR/assets`.
 */
export const MediaStorageLive: Layer.Layer<MediaStorage, ConfigError.ConfigError> = Layer.unwrapEffect(Effect.gen(function*() {
  // An empty S3_BUCKET, as an env file may leave it, means no bucket.
  const bucket = Option.filter(yield* Config.option(Config.string("S3_BUCKET")), (name) => name !== "")
  if (Option.isSome(bucket)) {
    const settings = yield* s3Settings(bucket.value)
    return (yield* S3StorageModule.load).layerS3Storage(settings)
  }
  const dataDir = yield* Config.string("DATA_DIR").pipe(Config.withDefault("./data"))
  return layerFileStorage(yield* Config.string("MEDIA_DIR").pipe(Config.withDefault(Path.join(dataDir, "assets"))))
}))
