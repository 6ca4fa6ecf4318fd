import { Multipart } from "@effect/platform"
import {
  type Asset,
  type AssetId,
  type AssetListQuery,
  Conflict,
  NotFound,
  PayloadTooLarge,
  QuotaExceeded,
  type TeamId,
  type UpdateAsset,
  type UploadAssetFields,
  uploadFormLimits
} from "@postline/domain"
import { Effect, Exit, Option, type Stream } from "effect"
import { randomUUID } from "node:crypto"
import { mkdtemp, rm } from "node:fs/promises"
import * as Path from "node:path"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { folderNotFound } from "../Folders/Service.js"
import { Cursors } from "../Pagination/Cursor.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { readUploadForm } from "./Form.js"
import { StorageGarbage } from "./Garbage.js"
import { sha256OfFile } from "./Hashing.js"
import { makeImageJobs } from "./ImageJobs.js"
import { prepare } from "./Inspection.js"
import { AssetsPolicy } from "./Policy.js"
import { AssetsRepo, type StoredAsset } from "./Repo.js"
import { MediaSettings } from "./Settings.js"
import { UrlSigning } from "./Signing.js"
import { type Spooled, unsupported } from "./Spool.js"
import { MediaStorage } from "./Storage.js"

export const assetNotFound = (id: AssetId) => new NotFound({ message: `Asset ${id} not found` })

/** An upload's answer: a new asset, or the one the team already had with the same bytes. */
export interface Uploaded {
  readonly created: boolean
  readonly asset: Asset
}

// An upload's objects become garbage this long after they are written unless its asset is saved first.
const uploadGraceSeconds = 3600

/** A folder of its own for one request's files under `parent`, removed with everything in it when the scope closes. */
export const scopedWorkDir = (parent: string) =>
  Effect.acquireRelease(
    Effect.promise(() => mkdtemp(Path.join(parent, "postline-"))),
    (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
  )

/** A team's media library: uploads checked and stored, metadata, and signed URLs of the bytes. */
export class Assets extends Effect.Service<Assets>()("Assets", {
  effect: Effect.gen(function*() {
    const repo = yield* AssetsRepo
    const policy = yield* AssetsPolicy
    const cursors = yield* Cursors
    const settings = yield* MediaSettings
    const signing = yield* UrlSigning
    const storage = yield* MediaStorage
    const garbage = yield* StorageGarbage
    // The parser's own bounds, beside the kind's limit that spooling applies exactly: no file, and no form around
    // it, larger. The parser counts a part's headers in its size: they get room of their own.
    const largestPart = Math.max(settings.maxImageBytes, settings.maxVideoBytes) + 16 * 1024
    const formLimits = {
      maxFileSize: Option.some(largestPart),
      maxTotalSize: Option.some(largestPart + uploadFormLimits.maxParts * uploadFormLimits.maxFieldSize + 64 * 1024)
    }
    // Images are decoded in processes of their own, a few at a time, with a bound on the pixels among them.
    const images = yield* makeImageJobs({ processes: settings.processingConcurrency, maxPixels: settings.maxImagePixels })

    /** The asset as the API shows it, with URLs valid for MEDIA_URL_SECONDS. */
    const withUrls = (asset: StoredAsset): Asset => {
      const { storageKey: _storageKey, thumbnailKey, ...shown } = asset
      const expiresAt = new Date(Date.now() + settings.urlSeconds * 1000)
      const original = signing.sign(asset.teamId, asset.id, "original", expiresAt)
      return {
        ...shown,
        url: original.url,
        thumbnailUrl: thumbnailKey === null ? null : signing.sign(asset.teamId, asset.id, "thumbnail", expiresAt).url,
        urlExpiresAt: original.expiresAt.toISOString()
      }
    }

    const found = (id: AssetId) => Option.match({ onNone: () => assetNotFound(id), onSome: (asset: StoredAsset) => Effect.succeed(withUrls(asset)) })

    const list = (teamId: TeamId, { folderId, kind, q, ...query }: AssetListQuery) =>
      authorize(policy.canRead(teamId))(() =>
        Effect.gen(function*() {
          const filters = { ...(folderId ? { folderId } : {}), ...(kind ? { kind } : {}), ...(q !== undefined ? { q } : {}) }
          const request = yield* pageRequest({ resource: "assets", filters: { teamId, ...filters } }, query)
          const page = yield* repo.list(teamId, filters, request)
          return { ...page, data: page.data.map((asset) => withUrls(asset)) }
        })).pipe(Effect.provideService(Cursors, cursors))

    const get = (teamId: TeamId, id: AssetId) =>
      authorize(policy.canRead(teamId))(() => Effect.flatMap(repo.find(teamId, id), found(id)))

    const update = (teamId: TeamId, id: AssetId, changes: UpdateAsset) =>
      authorize(policy.canWrite(teamId, { lock: true }))(() =>
        Effect.gen(function*() {
          if (changes.folderId != null && !(yield* repo.holdFolder(teamId, changes.folderId))) {
            return yield* folderNotFound(changes.folderId)
          }
          return yield* Effect.flatMap(repo.update(teamId, id, changes), found(id))
        })).pipe(transactionally)

    /** 409 while a post that is not a draft carries it: scheduled and publishing posts send it, published ones show it. */
    const remove = (teamId: TeamId, id: AssetId) =>
      authorize(policy.canWrite(teamId, { lock: true }))(() =>
        Effect.gen(function*() {
          const locked = yield* repo.lockUnlessCarried(teamId, id)
          if (Option.isNone(locked)) return yield* assetNotFound(id)
          if (Option.isSome(locked.value.carriedBy)) {
            return yield* new Conflict({
              message: `Asset ${id} is carried by a ${locked.value.carriedBy.value.replace("_", " ")} post: only assets of drafts, or of no post, can be deleted`,
              reason: "asset_in_use"
            })
          }
          return yield* Effect.flatMap(repo.remove(teamId, id), found(id))
        })).pipe(transactionally)

    /**
     * Saves an upload whose objects are stored: in one transaction with the caller's permission, the quota
     * checked on the organization's locked row, the folder held, and the keys taken out of the garbage.
     * Another upload of the same bytes that got there first wins: its asset is the answer.
     */
    const save = (teamId: TeamId, draft: Omit<Parameters<typeof repo.insert>[0], "organizationId">) =>
      authorize(policy.canWrite(teamId, { lock: true }))(() =>
        Effect.gen(function*() {
          const { mediaBytes, organizationId } = yield* repo.lockStorageOf(teamId)
          const existing = yield* repo.findBySha256(teamId, draft.sha256)
          if (Option.isSome(existing)) return { created: false, asset: existing.value }
          if (draft.folderId !== null && !(yield* repo.holdFolder(teamId, draft.folderId))) {
            return yield* folderNotFound(draft.folderId)
          }
          if (mediaBytes + draft.storedBytes > settings.quotaBytes) {
            return yield* new QuotaExceeded({
              message: `The organization stores ${mediaBytes} bytes of media; this upload's ${draft.storedBytes} would pass ` +
                `its quota of ${settings.quotaBytes}`
            })
          }
          const asset = yield* repo.insert({ ...draft, organizationId })
          yield* garbage.release([draft.storageKey, ...(draft.thumbnailKey === null ? [] : [draft.thumbnailKey])])
          return { created: true, asset }
        })).pipe(transactionally)

    /** Objects written for an upload that saved no asset of its own: removed now, else by the sweep later. */
    const discard = (keys: ReadonlyArray<string>) =>
      Effect.forEach(keys, (key) => storage.remove(key)).pipe(
        Effect.zipRight(garbage.release(keys)),
        Effect.catchAll((error) => Effect.logWarning("An upload's objects are left to the storage sweep", error))
      )

    /**
     * A file already spooled to a local temporary file (`spool`) becomes an asset: an image prepared
     * (upright, without metadata, a thumbnail), the objects stored, then the asset saved. Bytes the team
     * already has answer with its asset. Runs where the caller may write to the team (`Asset`, `write`).
     */
    const ingest = (teamId: TeamId, file: Spooled, details: {
      readonly fields: UploadAssetFields
      /** The file's own name, used when the fields give none. */
      readonly fileName: string | null
    }) =>
      Effect.gen(function*() {
        const known = yield* repo.findBySha256(teamId, file.sha256)
        if (Option.isSome(known)) return { created: false, asset: withUrls(known.value) } satisfies Uploaded
        const prepared = yield* prepare(file.path, file.sniffed, images).pipe(
          Effect.catchTag("ImageRefused", ({ reason }) =>
            Effect.fail(
              reason === "too_many_pixels"
                ? new PayloadTooLarge({ message: `The image has more than ${settings.maxImagePixels} pixels` })
                : reason === "out_of_memory"
                ? new PayloadTooLarge({ message: "Decoding the image took more memory than the server has free" })
                : unsupported
            ))
        )
        const id = randomUUID() as AssetId
        const storageKey = `assets/${teamId}/${id}/original.${prepared.extension}`
        const thumbnailKey = prepared.thumbnailPath === null ? null : `assets/${teamId}/${id}/thumbnail.webp`
        const keys = [storageKey, ...(thumbnailKey === null ? [] : [thumbnailKey])]
        // What a webhook's receiver checks the file at the asset's URL against: the stored copy's hash.
        const storedSha256 = prepared.path === file.path ? file.sha256 : yield* sha256OfFile(prepared.path)
        yield* garbage.reserve(keys, uploadGraceSeconds)
        const saved = yield* Effect.gen(function*() {
          yield* Effect.orDie(storage.putFile(storageKey, prepared.path, prepared.contentType))
          if (thumbnailKey !== null) yield* Effect.orDie(storage.putFile(thumbnailKey, prepared.thumbnailPath!, "image/webp"))
          return yield* save(teamId, {
            id,
            teamId,
            folderId: details.fields.folderId ?? null,
            name: details.fields.name ?? details.fileName ?? `${file.sniffed.kind}.${prepared.extension}`,
            kind: file.sniffed.kind,
            contentType: prepared.contentType,
            size: prepared.size,
            storedBytes: prepared.size + prepared.thumbnailSize,
            sha256: file.sha256,
            storedSha256,
            width: prepared.width,
            height: prepared.height,
            altText: details.fields.altText ?? null,
            storageKey,
            thumbnailKey
          })
        }).pipe(Effect.onExit((exit) => Exit.isSuccess(exit) && exit.value.created ? Effect.void : discard(keys)))
        return { created: saved.created, asset: withUrls(saved.asset) } satisfies Uploaded
      })

    /**
     * A multipart upload: the caller's right to write is checked before a byte is read, the file spooled to
     * a temporary folder as it arrives, its type sniffed, then ingested.
     */
    const upload = (teamId: TeamId, parts: Stream.Stream<Multipart.Part, Multipart.MultipartError>) =>
      authorize(policy.canWrite(teamId, { lock: false }))(() =>
        Effect.gen(function*() {
          const dir = yield* scopedWorkDir(settings.workDir)
          const form = yield* readUploadForm(Multipart.withLimitsStream(parts, formLimits), Path.join(dir, "upload"), settings)
          return yield* ingest(teamId, form.file, form)
        }).pipe(Effect.scoped))

    return { list, get, update, remove, upload, ingest } as const
  }),
  dependencies: [AssetsRepo.Default, AssetsPolicy.Default, Cursors.Default, MediaSettings.Default, UrlSigning.Default, StorageGarbage.Default]
}) {}
