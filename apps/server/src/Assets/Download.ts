import { type AssetId, Forbidden, RangeNotSatisfiable, type TeamId } from "@postline/domain"
import { Effect, Option, type Stream } from "effect"
import { AssetsRepo } from "./Repo.js"
import type { Variant } from "./Signing.js"
import { UrlSigning } from "./Signing.js"
import { type ByteRange, MediaStorage, type StorageError } from "./Storage.js"
import { assetNotFound } from "./Service.js"

export interface Download {
  readonly status: 200 | 206
  readonly headers: Readonly<Record<string, string>>
  readonly body: Stream.Stream<Uint8Array, StorageError>
}

/**
 * The one range of a `Range: bytes=…` header (first-last, first-, or -suffix) within `size` bytes; none
 * when there is no header or it is not one such range (the whole file is then sent, as RFC 9110 allows).
 * A range that starts past the end is unsatisfiable.
 */
export const rangeOf = (header: string | undefined, size: number): Option.Option<ByteRange | "unsatisfiable"> => {
  const match = header === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (match === null || (match[1] === "" && match[2] === "")) return Option.none()
  if (match[1] === "") {
    const suffix = Number(match[2])
    return suffix === 0 || size === 0 ? Option.some("unsatisfiable") : Option.some({ start: Math.max(0, size - suffix), end: size - 1 })
  }
  const start = Number(match[1])
  const end = match[2] === "" ? size - 1 : Math.min(Number(match[2]), size - 1)
  if (match[2] !== "" && Number(match[2]) < start) return Option.none()
  return start >= size ? Option.some("unsatisfiable") : Option.some({ start, end })
}

/** Downloads by signed URL: the signature is the permission, so no caller is needed. */
export class AssetDownloads extends Effect.Service<AssetDownloads>()("Assets/Downloads", {
  effect: Effect.gen(function*() {
    const repo = yield* AssetsRepo
    const signing = yield* UrlSigning
    const storage = yield* MediaStorage

    const open = (teamId: TeamId, assetId: AssetId, query: {
      readonly variant?: Variant
      readonly expires: string
      readonly signature: string
    }, rangeHeader: string | undefined) =>
      Effect.gen(function*() {
        const variant = query.variant ?? "original"
        if (!signing.verify(teamId, assetId, variant, query.expires, query.signature, new Date())) {
          return yield* new Forbidden({ message: "The URL's signature is not valid or has expired: get a new URL from the asset" })
        }
        const asset = yield* Effect.flatMap(repo.findForDownload(teamId, assetId), Option.match({
          onNone: () => assetNotFound(assetId),
          onSome: Effect.succeed
        }))
        const key = variant === "thumbnail" ? asset.thumbnailKey : asset.storageKey
        if (key === null) return yield* assetNotFound(assetId)
        const stored = yield* Effect.orDie(storage.size(key))
        if (Option.isNone(stored)) return yield* assetNotFound(assetId)
        const size = stored.value
        const common = {
          "content-type": variant === "thumbnail" ? "image/webp" : asset.contentType,
          "accept-ranges": "bytes",
          "cache-control": "private, max-age=300",
          "x-content-type-options": "nosniff"
        }
        const range = rangeOf(rangeHeader, size)
        if (Option.isSome(range) && range.value === "unsatisfiable") {
          return yield* new RangeNotSatisfiable({ message: `The asset has ${size} bytes` })
        }
        if (Option.isSome(range) && range.value !== "unsatisfiable") {
          const { end, start } = range.value
          return {
            status: 206,
            headers: { ...common, "content-length": String(end - start + 1), "content-range": `bytes ${start}-${end}/${size}` },
            body: storage.read(key, range.value)
          } satisfies Download
        }
        return { status: 200, headers: { ...common, "content-length": String(size) }, body: storage.read(key) } satisfies Download
      })

    return { open } as const
  }),
  dependencies: [AssetsRepo.Default, UrlSigning.Default]
}) {}
