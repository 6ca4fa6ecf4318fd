import { describe, expect, it, layer } from "@effect/vitest"
import { Chunk, Effect, Exit, Option, Stream } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { createReadStream, readFileSync, writeFileSync } from "node:fs"
import { open } from "node:fs/promises"
import * as Path from "node:path"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { MediaStorage, StorageError } from "../src/Assets/Storage.js"
import { scopedTempDir } from "./support/TestDatabase.js"
import { freshTestStorage, s3TestSettings, testStorageKinds } from "./support/TestStorage.js"

// A way to collect garbage on demand, so that memory samples count only what is still held.
setFlagsFromString("--expose-gc")
const collectGarbage = runInNewContext("gc") as () => void

const liveBytes = () => {
  // Twice: the second collection completes the freeing of ArrayBuffers that the first leaves running behind it.
  collectGarbage()
  collectGarbage()
  const usage = process.memoryUsage()
  return usage.heapUsed + usage.arrayBuffers
}

/**
 * How much more memory than before `effect` was held at most while it ran. A sample takes a while (two full
 * collections), so samples are 100 ms of the effect's work apart, the first 25 ms after its start.
 */
const peakMemoryGrowth = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const before = liveBytes()
    let peak = before
    let timer = setTimeout(function sample() {
      peak = Math.max(peak, liveBytes())
      timer = setTimeout(sample, 100)
    })
    const result = yield* Effect.ensuring(effect, Effect.sync(() => clearTimeout(timer)))
    return { result, growth: Math.max(peak, liveBytes()) - before }
  })

const bytesOf = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.map(Stream.runCollect(stream), (chunks) => Buffer.concat(Chunk.toArray(chunks)))

const sha256OfFile = (path: string) =>
  Effect.promise(async () => {
    const hash = createHash("sha256")
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer)
    return hash.digest("hex")
  })

const uniqueKey = (name: string) => `media/${randomBytes(4).toString("hex")}/${name}`

/** A file of random bytes in a folder removed with the test's scope. */
const sourceFile = (bytes: Buffer) =>
  Effect.map(scopedTempDir("postline-source-"), (dir) => {
    const path = Path.join(dir, "source.bin")
    writeFileSync(path, bytes)
    return path
  })

const largeFileBytes = 50 * 1024 * 1024

/** A 50 MB file written a megabyte at a time, with its SHA-256. */
const largeFile = Effect.gen(function*() {
  const dir = yield* scopedTempDir("postline-large-")
  const path = Path.join(dir, "large.bin")
  const hash = yield* Effect.promise(async () => {
    const file = await open(path, "w")
    const hash = createHash("sha256")
    const block = randomBytes(1024 * 1024)
    for (let i = 0; i < largeFileBytes / block.length; i++) {
      block.writeUInt32BE(i, 0) // no two megabytes alike
      hash.update(block)
      await file.write(block)
    }
    await file.close()
    return hash.digest("hex")
  })
  return { path, dir, hash }
})

for (const kind of testStorageKinds) {
  layer(freshTestStorage(kind), { excludeTestServices: true })(`media storage on ${kind}`, (it) => {
    it.scoped("stores a file and reads it back whole and in ranges, byte for byte", () =>
      Effect.gen(function*() {
        const storage = yield* MediaStorage
        expect(storage.kind).toBe(kind)
        const bytes = randomBytes(300_000)
        const key = uniqueKey("photo.jpg")
        yield* storage.putFile(key, yield* sourceFile(bytes), "image/jpeg")
        expect(yield* bytesOf(storage.read(key))).toEqual(bytes)
        expect(yield* bytesOf(storage.read(key, { start: 1000, end: 70_999 }))).toEqual(bytes.subarray(1000, 71_000))
        expect(yield* bytesOf(storage.read(key, { start: 0, end: 0 }))).toEqual(bytes.subarray(0, 1))
        // A range running past the end stops at the end, as HTTP's does.
        expect(yield* bytesOf(storage.read(key, { start: 299_990, end: 400_000 }))).toEqual(bytes.subarray(299_990))
      }))

    it.scoped("tells an object's size, and none for a missing one", () =>
      Effect.gen(function*() {
        const storage = yield* MediaStorage
        const key = uniqueKey("clip.mp4")
        yield* storage.putFile(key, yield* sourceFile(randomBytes(12_345)), "video/mp4")
        expect(yield* storage.size(key)).toEqual(Option.some(12_345))
        expect(yield* storage.size(uniqueKey("missing.mp4"))).toEqual(Option.none())
      }))

    it.scoped("copies an object to a local file, making its folder", () =>
      Effect.gen(function*() {
        const storage = yield* MediaStorage
        const bytes = randomBytes(100_000)
        const key = uniqueKey("photo.png")
        yield* storage.putFile(key, yield* sourceFile(bytes), "image/png")
        const target = Path.join(yield* scopedTempDir("postline-copy-"), "nested", "copy.png")
        yield* storage.copyToFile(key, target)
        expect(readFileSync(target)).toEqual(bytes)
      }))

    it.scoped("removes an object; removing it again succeeds; reading it then fails", () =>
      Effect.gen(function*() {
        const storage = yield* MediaStorage
        const key = uniqueKey("gone.jpg")
        yield* storage.putFile(key, yield* sourceFile(randomBytes(1000)), "image/jpeg")
        yield* storage.remove(key)
        expect(yield* storage.size(key)).toEqual(Option.none())
        yield* storage.remove(key)
        const read = yield* Effect.exit(bytesOf(storage.read(key)))
        expect(read).toMatchObject(Exit.fail(expect.any(StorageError)))
        const copy = yield* Effect.flip(storage.copyToFile(key, Path.join(yield* scopedTempDir("postline-copy-"), "x")))
        expect(copy).toMatchObject({ _tag: "StorageError", operation: "copy", key: expect.stringContaining(key) })
      }))

    it.scoped("lists every key under a prefix, nested ones too, none under a prefix with nothing", () =>
      Effect.gen(function*() {
        const storage = yield* MediaStorage
        const prefix = uniqueKey("listed") + "/"
        const keys = [`${prefix}a`, `${prefix}team/b`, `${prefix}team/c`]
        for (const key of keys) yield* storage.putFile(key, yield* sourceFile(randomBytes(10)), "application/octet-stream")
        expect((yield* storage.list(prefix)).toSorted()).toEqual(keys)
        expect(yield* storage.list(`${prefix}team/`)).toHaveLength(2)
        expect(yield* storage.list(uniqueKey("empty") + "/")).toEqual([])
      }))

    it.scoped("replaces an object stored again under the same key", () =>
      Effect.gen(function*() {
        const storage = yield* MediaStorage
        const key = uniqueKey("avatar.webp")
        yield* storage.putFile(key, yield* sourceFile(randomBytes(5000)), "image/webp")
        const second = randomBytes(3000)
        yield* storage.putFile(key, yield* sourceFile(second), "image/webp")
        expect(yield* storage.size(key)).toEqual(Option.some(3000))
        expect(yield* bytesOf(storage.read(key))).toEqual(second)
      }))

    it.scoped("streams a 50 MB file in and out without holding it in memory", () =>
      Effect.gen(function*() {
        const storage = yield* MediaStorage
        const source = yield* largeFile
        const key = uniqueKey("large.mp4")
        const limit = 25 * 1024 * 1024

        const put = yield* peakMemoryGrowth(storage.putFile(key, source.path, "video/mp4"))
        expect(put.growth).toBeLessThan(limit)
        expect(yield* storage.size(key)).toEqual(Option.some(largeFileBytes))

        const read = yield* peakMemoryGrowth(Stream.runFold(
          storage.read(key),
          { bytes: 0, hash: createHash("sha256") },
          (state, chunk) => (state.hash.update(chunk), { bytes: state.bytes + chunk.length, hash: state.hash })
        ))
        expect(read.growth).toBeLessThan(limit)
        expect(read.result.bytes).toBe(largeFileBytes)
        expect(read.result.hash.digest("hex")).toBe(source.hash)

        // The measure itself: holding the whole file, as collecting the stream does, shows.
        const held = yield* peakMemoryGrowth(Stream.runCollect(storage.read(key)))
        expect(held.growth).toBeGreaterThan(largeFileBytes * 0.9)

        const copyPath = Path.join(source.dir, "copy.bin")
        const copy = yield* peakMemoryGrowth(storage.copyToFile(key, copyPath))
        expect(copy.growth).toBeLessThan(limit)
        expect(yield* sha256OfFile(copyPath)).toBe(source.hash)
      }))

    if (kind === "filesystem") {
      it.effect("has no presigned uploads: Postline receives them itself", () =>
        Effect.gen(function*() {
          const storage = yield* MediaStorage
          expect(yield* storage.presignPut(uniqueKey("upload.jpg"), { contentLength: 10, expiresInSeconds: 60 }))
            .toEqual(Option.none())
        }))
    } else {
      it.scoped("presigns a PUT of exactly the given length; the server refuses any other length", () =>
        Effect.gen(function*() {
          const storage = yield* MediaStorage
          const key = uniqueKey("upload.jpg")
          const bytes = randomBytes(20_000)
          const presigned = Option.getOrThrow(
            yield* storage.presignPut(key, { contentLength: bytes.length, expiresInSeconds: 60 })
          )
          expect(presigned).toMatchObject({ method: "PUT", headers: { "content-length": "20000" } })
          const { "content-length": _, ...otherHeaders } = presigned.headers
          const put = (body: Uint8Array, headers: Record<string, string>) =>
            Effect.promise(() => fetch(presigned.url, { method: "PUT", body, headers }).then((r) => r.status))

          // Shorter or longer than signed: refused (Swift's s3api answers 403 SignatureDoesNotMatch).
          expect(yield* put(bytes.subarray(1), otherHeaders)).toBe(403)
          expect(yield* put(Buffer.concat([bytes, Buffer.from("x")]), otherHeaders)).toBe(403)
          expect(yield* storage.size(key)).toEqual(Option.none())

          expect(yield* put(bytes, presigned.headers)).toBe(200)
          expect(yield* bytesOf(storage.read(key))).toEqual(bytes)
        }))
    }
  })
}

describe.runIf(testStorageKinds.includes("s3"))("media storage on S3 with a wrong secret", () => {
  it.scoped("is refused, for every operation and for presigned uploads", () =>
    Effect.gen(function*() {
      const storage = yield* MediaStorage
      const key = uniqueKey("refused.jpg")
      const errors = [
        yield* Effect.flip(storage.putFile(key, yield* sourceFile(randomBytes(100)), "image/jpeg")),
        yield* Effect.flip(storage.size(key)),
        yield* Effect.flip(bytesOf(storage.read(key))),
        yield* Effect.flip(storage.remove(key))
      ]
      for (const error of errors) {
        expect(error).toBeInstanceOf(StorageError)
        expect(error.cause).toMatchObject({ $metadata: { httpStatusCode: 403 } })
      }
      const presigned = Option.getOrThrow(yield* storage.presignPut(key, { contentLength: 3, expiresInSeconds: 60 }))
      const status = yield* Effect.promise(() =>
        fetch(presigned.url, { method: "PUT", body: "abc", headers: presigned.headers }).then((r) => r.status)
      )
      expect(status).toBe(403)
    }).pipe(Effect.provide(freshTestStorage("s3", s3TestSettings("not-the-secret")))))
})
