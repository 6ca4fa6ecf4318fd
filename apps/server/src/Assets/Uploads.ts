import type { HttpServerRequest } from "@effect/platform"
import {
  type AssetUpload,
  type AssetUploadId,
  BadRequest,
  Conflict,
  type CreateAssetUpload,
  Forbidden,
  NotFound,
  maxOpenUploadsPerTeam,
  PayloadTooLarge,
  QuotaExceeded,
  type TeamId
} from "@postline/domain"
import { Cause, Duration, Effect, Exit, Option, Schedule } from "effect"
import { randomUUID } from "node:crypto"
import * as Path from "node:path"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { folderNotFound } from "../Folders/Service.js"
import { StorageGarbage } from "./Garbage.js"
import { AssetsPolicy } from "./Policy.js"
import { AssetsRepo } from "./Repo.js"
import { Assets, scopedWorkDir } from "./Service.js"
import { MediaSettings } from "./Settings.js"
import { spool } from "./Spool.js"
import { MediaStorage } from "./Storage.js"
import { type UploadState, UploadsRepo, uploadsPrefix } from "./UploadsRepo.js"
import { UploadUrls } from "./UploadUrls.js"
import { writeExactly } from "./WriteExactly.js"

// An hour to send the bytes and complete; a key stays reserved an hour longer, for completions under way.
const uploadSeconds = 3600
const sweepGraceSeconds = 3600

const uploadNotFound = (id: AssetUploadId) =>
  new NotFound({ message: `Upload ${id} not found: it expired, was completed, or never was this team's` })

// Refusals of the bytes or of the upload's own fields spend the upload: completing again could not succeed.
const spendingRefusals = new Set(["BadRequest", "PayloadTooLarge", "UnsupportedMediaType", "NotFound"])

const spends = (exit: Exit.Exit<unknown, { readonly _tag: string }>) =>
  Exit.isSuccess(exit) || Option.exists(Cause.failureOption(exit.cause), (error) => spendingRefusals.has(error._tag))

/**
 * Presigned uploads, for files too large to send in one request to the API: the caller declares the file,
 * PUTs its bytes to a signed URL (the bucket's, or this server's when media live in a folder), then completes
 * the upload, which checks the bytes and saves them as an asset.
 */
export class AssetUploads extends Effect.Service<AssetUploads>()("Assets/Uploads", {
  effect: Effect.gen(function*() {
    const repo = yield* UploadsRepo
    const assetsRepo = yield* AssetsRepo
    const policy = yield* AssetsPolicy
    const assets = yield* Assets
    const settings = yield* MediaSettings
    const urls = yield* UploadUrls
    const garbage = yield* StorageGarbage
    const storage = yield* MediaStorage
    const claimSeconds = settings.leaseSeconds

    /** Moves to `state`, held by this process's claim when it is one. */
    const setState = (id: AssetUploadId, state: UploadState) => repo.setState(id, state, claimSeconds)

    /** Renews the upload's claim, a third of its lease at a time, until the scope closes: the process is still at it. */
    const keepClaimed = (id: AssetUploadId) =>
      repo.renewClaim(id, claimSeconds).pipe(
        Effect.repeat(Schedule.spaced(Duration.millis(claimSeconds * 1000 / 3))),
        Effect.delay(Duration.millis(claimSeconds * 1000 / 3)),
        Effect.forkScoped
      )

    /**
     * Starts an upload, in one transaction with the caller's permission: the declared size counts against the
     * organization's quota (on its locked row, with the other open uploads) until it is completed or expires.
     */
    const create = (teamId: TeamId, { sha256, size, ...fields }: CreateAssetUpload) =>
      Effect.gen(function*() {
        const id = randomUUID() as AssetUploadId
        const storageKey = `${uploadsPrefix}${teamId}/${id}`
        const expiresAt = new Date((Math.floor(Date.now() / 1000) + uploadSeconds) * 1000)
        yield* authorize(policy.canWrite(teamId, { lock: true }))((team) =>
          Effect.gen(function*() {
            if (size > settings.maxVideoBytes) {
              return yield* new PayloadTooLarge({ message: `A file may have at most ${settings.maxVideoBytes} bytes (an image ${settings.maxImageBytes})` })
            }
            if (fields.folderId !== undefined && !(yield* assetsRepo.holdFolder(teamId, fields.folderId))) {
              return yield* folderNotFound(fields.folderId)
            }
            yield* repo.forgetExpired(teamId)
            const { mediaBytes } = yield* assetsRepo.lockStorageOf(teamId)
            const open = yield* repo.openClaims(team.organizationId, teamId)
            if (open.teamUploads >= maxOpenUploadsPerTeam) {
              return yield* new Conflict({
                message: `The team has ${open.teamUploads} uploads open: complete them, or wait for them to expire (an hour)`,
                reason: "too_many_open_uploads"
              })
            }
            if (mediaBytes + open.bytes + size > settings.quotaBytes) {
              return yield* new QuotaExceeded({
                message: `The organization stores ${mediaBytes} bytes of media and has uploads open for ${open.bytes} more; ` +
                  `this upload's ${size} would pass its quota of ${settings.quotaBytes}`
              })
            }
            // Reserved before any byte can arrive: an upload never completed leaves nothing behind.
            yield* garbage.reserve([storageKey], uploadSeconds + sweepGraceSeconds)
            const upload = { id, teamId, size, sha256: sha256?.toLowerCase() ?? null, fields, storageKey }
            yield* repo.insert({ ...upload, organizationId: team.organizationId, expiresAt })
          })
        ).pipe(transactionally)
        const presigned = yield* Effect.orDie(storage.presignPut(storageKey, { contentLength: size, expiresInSeconds: uploadSeconds }))
        return {
          uploadId: id,
          ...Option.getOrElse(presigned, () => ({
            method: "PUT" as const,
            url: urls.sign(id, expiresAt),
            headers: { "content-length": String(size) }
          })),
          expiresAt: expiresAt.toISOString()
        } satisfies AssetUpload
      })

    /**
     * The PUT to this server's signed URL: its bytes written to a temporary file as they arrive, exactly the
     * declared number, then stored under the upload's key. A PUT refused leaves the URL usable; one that stored
     * the bytes uses it up.
     */
    const receive = (
      id: AssetUploadId,
      query: { readonly expires: string; readonly signature: string },
      request: HttpServerRequest.HttpServerRequest
    ) =>
      Effect.gen(function*() {
        if (!urls.verify(id, query.expires, query.signature, new Date())) {
          return yield* new Forbidden({ message: "The URL's signature is not valid or has expired: start a new upload" })
        }
        const declared = request.headers["content-length"]
        const upload = yield* Effect.gen(function*() {
          const found = yield* Effect.flatMap(repo.lockForPut(id), Option.match({ onNone: () => uploadNotFound(id), onSome: Effect.succeed }))
          if (found.state !== "pending") {
            return yield* new Conflict({
              message: `Upload ${id}'s bytes were already sent, or are arriving: complete it`,
              reason: "upload_already_sent"
            })
          }
          if (declared !== undefined && Number(declared) !== found.size) {
            return yield* new BadRequest({
              message: `The upload declared ${found.size} bytes; Content-Length is ${declared}`,
              reason: "size_mismatch"
            })
          }
          yield* setState(id, "receiving")
          return found
        }).pipe(transactionally)
        yield* Effect.gen(function*() {
          yield* keepClaimed(id)
          const path = Path.join(yield* scopedWorkDir(settings.workDir), "upload")
          yield* writeExactly(request.stream, path, upload.size)
          yield* Effect.orDie(storage.putFile(upload.storageKey, path, "application/octet-stream"))
        }).pipe(
          Effect.scoped,
          Effect.onExit((exit) => setState(id, Exit.isSuccess(exit) ? "received" : "pending"))
        )
      })

    /**
     * The team's upload, locked, when no live process holds it: 404 when the team has no such upload, 409 while it is
     * busy elsewhere (a claim of a process that died has lapsed: `UploadsRepo` answers the state before it).
     */
    const lockIdle = (teamId: TeamId, id: AssetUploadId) =>
      Effect.gen(function*() {
        const found = yield* Effect.flatMap(repo.lockOfTeam(teamId, id), Option.match({ onNone: () => uploadNotFound(id), onSome: Effect.succeed }))
        if (found.state === "receiving" || found.state === "completing") {
          return yield* new Conflict({
            message: `Upload ${id} is ${found.state === "receiving" ? "still receiving its bytes" : "being completed"}`,
            reason: "upload_busy"
          })
        }
        return found
      })

    /** Claims the upload for completing. */
    const claim = (teamId: TeamId, id: AssetUploadId) =>
      Effect.tap(lockIdle(teamId, id), () => setState(id, "completing")).pipe(transactionally)

    /** An upload done with: its row goes now, its object now or by the sweep (its key stays reserved for a late PUT). */
    const spend = (id: AssetUploadId, key: string) =>
      Effect.zipRight(
        repo.remove(id),
        storage.remove(key).pipe(Effect.catchAll((error) => Effect.logWarning("An upload's object is left to the storage sweep", error)))
      )

    /**
     * Checks the bytes stored under the upload's key (present, of the declared size and SHA-256, of a type the server
     * takes, within its kind's limit) while copying them to a temporary file, then ingests them as an upload would.
     */
    const complete = (teamId: TeamId, id: AssetUploadId) =>
      authorize(policy.canWrite(teamId, { lock: false }))(() =>
        Effect.gen(function*() {
          const upload = yield* claim(teamId, id)
          // Where a completion that does not spend the upload leaves it: with its bytes or, when none were PUT, without.
          let idleState: UploadState = upload.state
          return yield* Effect.gen(function*() {
            yield* keepClaimed(id)
            const stored = yield* Effect.orDie(storage.size(upload.storageKey))
            idleState = Option.isSome(stored) ? "received" : "pending"
            if (Option.isNone(stored)) {
              return yield* new Conflict({
                message: `Nothing was PUT to upload ${id}'s URL yet: send the bytes, then complete it`,
                reason: "upload_bytes_missing"
              })
            }
            if (stored.value !== upload.size) {
              return yield* new BadRequest({
                message: `The upload declared ${upload.size} bytes; ${stored.value} arrived`,
                reason: "size_mismatch"
              })
            }
            const path = Path.join(yield* scopedWorkDir(settings.workDir), "upload")
            const file = yield* spool(storage.read(upload.storageKey), path, settings).pipe(Effect.catchTag("StorageError", Effect.die))
            if (upload.sha256 !== null && file.sha256 !== upload.sha256) {
              return yield* new BadRequest({
                message: `The upload declared SHA-256 ${upload.sha256}; the bytes that arrived have ${file.sha256}`,
                reason: "checksum_mismatch"
              })
            }
            return yield* assets.ingest(teamId, file, { fields: upload.fields, fileName: null })
          }).pipe(
            Effect.scoped,
            Effect.onExit((exit): Effect.Effect<void> => spends(exit) ? spend(id, upload.storageKey) : setState(id, idleState))
          )
        }))

    /**
     * Gives the upload up: its declared bytes stop counting against the quota and the team's open uploads, its object
     * goes. 409 while a live process sends or completes it; one interrupted by a process that died can be cancelled.
     */
    const cancel = (teamId: TeamId, id: AssetUploadId) =>
      authorize(policy.canWrite(teamId, { lock: false }))(() =>
        Effect.gen(function*() {
          const upload = yield* lockIdle(teamId, id).pipe(Effect.tap(() => repo.remove(id)), transactionally)
          yield* storage.remove(upload.storageKey).pipe(
            Effect.catchAll((error) => Effect.logWarning("A cancelled upload's object is left to the storage sweep", error))
          )
        }))

    return { create, receive, complete, cancel } as const
  }),
  dependencies: [
    UploadsRepo.Default,
    AssetsRepo.Default,
    AssetsPolicy.Default,
    MediaSettings.Default,
    UploadUrls.Default,
    StorageGarbage.Default,
    Assets.Default
  ]
}) {}
