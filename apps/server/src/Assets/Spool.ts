import { PayloadTooLarge, UnsupportedMediaType } from "@postline/domain"
import { Effect, Stream } from "effect"
import { createHash } from "node:crypto"
import { open } from "node:fs/promises"
import { type Sniffed, sniff, sniffBytes } from "./Inspection.js"

export interface SizeLimits {
  readonly maxImageBytes: number
  readonly maxVideoBytes: number
}

export interface Spooled {
  readonly path: string
  readonly size: number
  /** Hex SHA-256 of the bytes as they came. */
  readonly sha256: string
  readonly sniffed: Sniffed
}

export const unsupported = new UnsupportedMediaType({
  message: "The file is not a JPEG, PNG, WebP, GIF, HEIC or MP4 (its type is read from its bytes, not its name)"
})

const tooLarge = (sniffed: Sniffed, limits: SizeLimits) =>
  new PayloadTooLarge({
    message: `The ${sniffed.kind} is larger than ${sniffed.kind === "image" ? limits.maxImageBytes : limits.maxVideoBytes} bytes`
  })

/**
 * Writes the bytes to the file at `path` as they arrive, hashing and counting them: the first ones tell
 * its type, which is refused (415) before more is written, and its kind's limit stops it (413) as soon as
 * it is passed. Only a few kilobytes are held at any time.
 */
export const spool = <E, R>(content: Stream.Stream<Uint8Array, E, R>, path: string, limits: SizeLimits) =>
  Effect.acquireUseRelease(
    Effect.promise(() => open(path, "wx", 0o600)),
    (file) =>
      Effect.gen(function*() {
        const hash = createHash("sha256")
        let size = 0
        let head: Array<Uint8Array> | undefined = []
        let sniffed: Sniffed | undefined
        const identify = Effect.gen(function*() {
          const found = yield* sniff(Buffer.concat(head!))
          if (found === undefined) return yield* Effect.fail(unsupported)
          sniffed = found
          for (const chunk of head!) yield* Effect.promise(() => file.write(chunk))
          head = undefined
        })
        yield* Stream.runForEach(content, (chunk) =>
          Effect.gen(function*() {
            size += chunk.length
            hash.update(chunk)
            if (sniffed !== undefined) {
              if (size > limitOf(sniffed, limits)) return yield* Effect.fail(tooLarge(sniffed, limits))
              return yield* Effect.promise(() => file.write(chunk))
            }
            head!.push(chunk)
            if (size >= sniffBytes) yield* identify
            if (sniffed !== undefined && size > limitOf(sniffed, limits)) return yield* Effect.fail(tooLarge(sniffed, limits))
          }))
        if (sniffed === undefined) yield* identify
        return { path, size, sha256: hash.digest("hex"), sniffed: sniffed! } satisfies Spooled
      }),
    (file) => Effect.promise(() => file.close())
  )

const limitOf = (sniffed: Sniffed, limits: SizeLimits) => sniffed.kind === "image" ? limits.maxImageBytes : limits.maxVideoBytes
