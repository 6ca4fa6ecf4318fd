import { type Context, Effect, Layer, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { createConnection } from "node:net"
import { layerFileStorage } from "../../src/Assets/FileStorage.js"
import { layerS3Storage, type S3Settings } from "../../src/Assets/S3Storage.js"
import { MediaStorage } from "../../src/Assets/Storage.js"
import { scopedTempDir } from "./TestDatabase.js"

/** The tests' S3 server: Swift with its S3 API, as `.ci/swift-s3.sh` starts it. */
export const s3TestServer = {
  endpoint: process.env.TEST_S3_ENDPOINT ?? "http://127.0.0.1:8089",
  accessKeyId: process.env.TEST_S3_ACCESS_KEY_ID ?? "postline:tester",
  secretAccessKey: process.env.TEST_S3_SECRET_ACCESS_KEY ?? "testing",
  bucket: process.env.TEST_S3_BUCKET ?? "postline-test"
}

/** Settings for the test bucket; another secret makes a client that the server must refuse. */
export const s3TestSettings = (secretAccessKey = s3TestServer.secretAccessKey): S3Settings => ({
  bucket: s3TestServer.bucket,
  endpoint: s3TestServer.endpoint,
  region: "us-east-1",
  accessKeyId: Redacted.make(s3TestServer.accessKeyId),
  secretAccessKey: Redacted.make(secretAccessKey),
  forcePathStyle: true
})

/** Whether something listens at the S3 endpoint. */
export const s3Reachable = () => {
  const url = new URL(s3TestServer.endpoint)
  return new Promise<boolean>((resolve) => {
    const socket = createConnection({ host: url.hostname, port: Number(url.port || 80), timeout: 1000 })
    socket.once("connect", () => (socket.destroy(), resolve(true)))
    socket.once("error", () => resolve(false))
    socket.once("timeout", () => (socket.destroy(), resolve(false)))
  })
}

export type TestStorageKind = Context.Tag.Service<MediaStorage>["kind"]

const withS3 = await s3Reachable()
if (!withS3) {
  const message = `The S3 server is not reachable at ${s3TestServer.endpoint} (start it with: bash .ci/swift-s3.sh)`
  // As with PostgreSQL (vitest.workspace.ts): CI tests both kinds; elsewhere the folder is still tested.
  if (process.env.CI) throw new Error(`${message}: CI tests media storage on S3 too`)
  console.warn(`\n${message}: SKIPPING the S3 half of the media storage tests.\n`)
}

/** The kinds of media storage this run tests. */
export const testStorageKinds: ReadonlyArray<TestStorageKind> = withS3 ? ["filesystem", "s3"] : ["filesystem"]

/**
 * The storage below, seen under a random key prefix of its own, so that tests sharing the bucket never meet;
 * what it stored is removed when the layer's scope closes, for the bucket not to grow run after run.
 */
const underFreshPrefix = Layer.scoped(
  MediaStorage,
  Effect.gen(function*() {
    const storage = yield* MediaStorage
    const prefix = `test-${randomBytes(6).toString("hex")}/`
    const stored = new Set<string>()
    yield* Effect.addFinalizer(() => Effect.forEach(stored, (key) => Effect.ignore(storage.remove(key)), { discard: true }))
    const storing = (key: string) => (stored.add(prefix + key), prefix + key)
    return MediaStorage.of({
      ...storage,
      putFile: (key, path, contentType) => Effect.suspend(() => storage.putFile(storing(key), path, contentType)),
      size: (key) => storage.size(prefix + key),
      read: (key, range) => storage.read(prefix + key, range),
      copyToFile: (key, path) => storage.copyToFile(prefix + key, path),
      list: (under) => Effect.map(storage.list(prefix + under), (keys) => keys.map((key) => key.slice(prefix.length))),
      remove: (key) => storage.remove(prefix + key),
      presignPut: (key, options) => Effect.suspend(() => storage.presignPut(storing(key), options))
    })
  })
)

/** A new, empty media storage of this kind: a temporary folder, or a fresh prefix in the test bucket. */
export const freshTestStorage = (kind: TestStorageKind, s3Settings = s3TestSettings()): Layer.Layer<MediaStorage> =>
  kind === "filesystem"
    ? Layer.unwrapScoped(Effect.map(scopedTempDir("postline-media-"), layerFileStorage))
    : underFreshPrefix.pipe(Layer.provide(layerS3Storage(s3Settings)))
