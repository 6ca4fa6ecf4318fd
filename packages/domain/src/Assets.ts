import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AltText } from "./AltText.js"
import {
  AssetUpload,
  AssetUploadId,
  BadGateway,
  CreateAssetUpload,
  ImportAsset,
  maxOpenUploadsPerTeam,
  UploadAssetForm
} from "./AssetUploads.js"
import { PayloadTooLarge, QuotaExceeded, UnsupportedMediaType } from "./Errors.js"
import { codePoints, integer, invalidUnless, oneOf, optional, strict, Text, Timestamp } from "./Fields.js"
import { FolderName } from "./Folders.js"
import { AssetId, FolderId, TeamId } from "./Ids.js"
import { ListEnvelope, listQueryFields } from "./Lists.js"

export const AssetKind = oneOf("image", "video").annotations({ identifier: "AssetKind", description: "image or video" })
export type AssetKind = typeof AssetKind.Type

export const Asset = Schema.Struct({
  id: AssetId,
  teamId: TeamId,
  folderId: Schema.NullOr(FolderId).annotations({ description: "The folder it is in; null at the top of the library" }),
  name: FolderName.annotations({ description: "Its name: the uploaded file's name unless one was given" }),
  kind: AssetKind,
  contentType: Schema.String.annotations({
    description: "The stored copy's type, read from its bytes: image/jpeg (HEIC is stored as JPEG), image/png, image/webp, image/gif or video/mp4"
  }),
  size: integer("The stored copy's size in bytes"),
  sha256: Schema.String.annotations({ description: "Hex SHA-256 of the bytes as uploaded: the same bytes uploaded to the team again give this asset" }),
  width: Schema.NullOr(integer("Width in pixels; null for a video")),
  height: Schema.NullOr(integer("Height in pixels; null for a video")),
  altText: Schema.NullOr(Schema.String).annotations({ description: "Its alt text, sent with it unless a post gives its own" }),
  url: Schema.String.annotations({
    description: "A signed URL of the stored copy (GET, with Range), valid until urlExpiresAt: absolute when the server has a PUBLIC_URL, else a path on this server"
  }),
  thumbnailUrl: Schema.NullOr(Schema.String).annotations({
    description: "A signed URL of a WebP thumbnail at most 320 pixels on its longer side, valid until urlExpiresAt; null for a video"
  }),
  urlExpiresAt: Timestamp,
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotations({
  identifier: "Asset",
  description: "An image or video of a team's media library. Images are stored without their metadata (EXIF, GPS), turned upright"
})
export type Asset = typeof Asset.Type

/** An upload of bytes the team already has: the existing asset, unchanged. */
export const ExistingAsset = Asset.annotations({
  identifier: "ExistingAsset",
  description: "The team already had these exact bytes: the existing asset, unchanged (200 rather than 201)"
})

export const UpdateAsset = Schema.Struct({
  name: optional(FolderName),
  altText: optional(Schema.NullOr(AltText)),
  folderId: optional(Schema.NullOr(FolderId).annotations({ description: "Moves it into this folder; null: to the top" }))
}).annotations({ ...strict, identifier: "UpdateAsset" })
export type UpdateAsset = typeof UpdateAsset.Type

export const AssetListQuery = Schema.Struct({
  ...listQueryFields,
  folderId: optional(FolderId.annotations({ description: "Only the assets directly in this folder" })),
  kind: optional(AssetKind),
  q: optional(Text.pipe(Schema.filter((text) => codePoints(text) <= 255, { jsonSchema: { maxLength: 255 } })).annotations({
    description: "Only assets whose name or alt text contains this, in any case (at most 255 characters)",
    ...invalidUnless("must be a string of at most 255 characters")
  }))
}).annotations(strict)
export type AssetListQuery = typeof AssetListQuery.Type

export const AssetList = ListEnvelope(Asset, "AssetList")

const teamPath = Schema.Struct({ teamId: TeamId })

const uploadPath = Schema.Struct({ teamId: TeamId, uploadId: AssetUploadId })

const assetPath = Schema.Struct({ teamId: TeamId, assetId: AssetId })

export class AssetsGroup extends HttpApiGroup.make("assets")
  .add(
    HttpApiEndpoint.get("listAssets", "/v1/teams/:teamId/assets")
      .setPath(Schema.Struct({ teamId: TeamId }))
      .setUrlParams(AssetListQuery)
      .addSuccess(AssetList)
      .annotate(OpenApi.Summary, "List assets")
      .annotate(OpenApi.Description, "The team's images and videos, filtered by folder, kind and text. Any member may list them.")
  )
  .add(
    HttpApiEndpoint.get("getAsset", "/v1/teams/:teamId/assets/:assetId")
      .setPath(assetPath)
      .addSuccess(Asset)
      .annotate(OpenApi.Summary, "Get an asset")
      .annotate(OpenApi.Description, "Its metadata and fresh signed URLs of its bytes and thumbnail.")
  )
  .add(
    HttpApiEndpoint.patch("updateAsset", "/v1/teams/:teamId/assets/:assetId")
      .setPath(assetPath)
      .setPayload(UpdateAsset)
      .addSuccess(Asset)
      .annotate(OpenApi.Summary, "Rename, describe or move an asset")
      .annotate(OpenApi.Description, "Changes its name, its alt text (null: none) or its folder (null: the top; 404 for a folder the team does not have).")
  )
  .add(
    HttpApiEndpoint.del("deleteAsset", "/v1/teams/:teamId/assets/:assetId")
      .setPath(assetPath)
      .addSuccess(Asset)
      .annotate(OpenApi.Summary, "Delete an asset")
      .annotate(
        OpenApi.Description,
        "Answers the deleted asset; its bytes are removed from storage soon after. 409 `asset_in_use` while a scheduled or " +
          "publishing post carries it."
      )
  )
  .add(
    HttpApiEndpoint.post("createAssetUpload", "/v1/teams/:teamId/assets/uploads")
      .setPath(teamPath)
      .setPayload(CreateAssetUpload)
      .addSuccess(AssetUpload, { status: 201 })
      .addError(PayloadTooLarge)
      .addError(QuotaExceeded)
      .annotate(OpenApi.Summary, "Start a presigned upload")
      .annotate(
        OpenApi.Description,
        "For large files: declare the file's exact `size` (and, to have its bytes checked, its `sha256`), then PUT the raw " +
          "bytes to the answer's `url` with its `headers` (no bearer token: the URL is the permission; on S3 storage the " +
          "bytes go straight to the bucket) and complete the upload before `expiresAt` (an hour). A size over " +
          "MEDIA_MAX_VIDEO_BYTES gets 413 `PayloadTooLarge`, a folder the team does not have 404. The declared size counts " +
          "against the organization's quota until the upload is completed or expires: past it, 409 `QuotaExceeded`; a " +
          `team has at most ${maxOpenUploadsPerTeam} uploads open at once (409 \`too_many_open_uploads\` beyond).`
      )
  )
  .add(
    HttpApiEndpoint.post("completeAssetUpload", "/v1/teams/:teamId/assets/uploads/:uploadId/complete")
      .setPath(uploadPath)
      .addSuccess(Asset, { status: 201 })
      .addSuccess(ExistingAsset, { status: 200 })
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .addError(QuotaExceeded)
      .annotate(OpenApi.Summary, "Complete a presigned upload")
      .annotate(
        OpenApi.Description,
        "Checks the bytes PUT to the upload's URL, then saves them as an asset, as an upload does (201, or 200 with the " +
          "asset the team already had; 413, 415 and 409 `QuotaExceeded` alike). Bytes of another size than declared, or " +
          "of another SHA-256, get 400 `size_mismatch` or `checksum_mismatch`; these, 413, 415 and a folder gone (404) " +
          "spend the upload (start a new one). Nothing PUT yet gets 409 `upload_bytes_missing`, a PUT still arriving " +
          "409 `upload_busy`; those and 409 `QuotaExceeded` leave the upload to complete again, as does a completion cut short by a server that stopped, once MEDIA_LEASE_SECONDS " +
          "(a minute) have passed. An upload unknown, expired, of another team or already completed gets 404 " +
          "`NotFound`: completing is done once."
      )
  )
  .add(
    HttpApiEndpoint.del("cancelAssetUpload", "/v1/teams/:teamId/assets/uploads/:uploadId")
      .setPath(uploadPath)
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(OpenApi.Summary, "Cancel a presigned upload")
      .annotate(
        OpenApi.Description,
        "Gives the upload up (204): its declared size stops counting against the organization's quota and the team's " +
          "open uploads, and any bytes PUT to its URL are removed. 409 `upload_busy` while its bytes are arriving or it is " +
          "being completed; one left so by a server process that stopped (a crash) can be sent, completed or cancelled " +
          "again once MEDIA_LEASE_SECONDS (a minute) have passed. An upload unknown, expired, of another team or already " +
          "completed gets 404 `NotFound`."
      )
  )
  .add(
    HttpApiEndpoint.post("importAsset", "/v1/teams/:teamId/assets/import")
      .setPath(teamPath)
      .setPayload(ImportAsset)
      .addSuccess(Asset, { status: 201 })
      .addSuccess(ExistingAsset, { status: 200 })
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .addError(QuotaExceeded)
      .addError(BadGateway)
      .annotate(OpenApi.Summary, "Import an asset from a URL")
      .annotate(
        OpenApi.Description,
        "The server fetches the file at `url` and saves it as an upload does (201, or 200 with the asset the team already " +
          "had; 413 as soon as more bytes than its kind's limit arrive, 415, 409 `QuotaExceeded`). Only `https` addresses " +
          "on the public internet are fetched, redirects are not followed: anything else gets 400 `url_not_callable` saying why. " +
          "An address that does not answer, answers too slowly (2 minutes) or answers an error status gets 502 `BadGateway`."
      )
  )
  .annotate(OpenApi.Title, "assets")
  .annotate(OpenApi.Description, "Images and videos of a team's media library. Any member of the team's organization, and its API keys, may manage them.")
{}

export class AssetUploadsGroup extends HttpApiGroup.make("assetUploads")
  .add(
    HttpApiEndpoint.post("uploadAsset", "/v1/teams/:teamId/assets")
      .setPath(Schema.Struct({ teamId: TeamId }))
      .setPayload(UploadAssetForm)
      .addSuccess(Asset, { status: 201 })
      .addSuccess(ExistingAsset, { status: 200 })
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .addError(QuotaExceeded)
      .annotate(OpenApi.Summary, "Upload an asset")
      .annotate(
        OpenApi.Description,
        "One file as `multipart/form-data` (`file`, and optionally `name`, `altText`, `folderId`), streamed to storage. " +
          "Its type is read from its bytes, not its name: anything but JPEG, PNG, WebP, GIF, HEIC (stored as JPEG) or MP4 " +
          "gets 415 `UnsupportedMediaType`. Images of more than MEDIA_MAX_IMAGE_BYTES (20 MB by default) and videos of more " +
          "than MEDIA_MAX_VIDEO_BYTES (300 MB) get 413 `PayloadTooLarge`; an upload that would take the organization's " +
          "media past its quota (MEDIA_QUOTA_BYTES, 5 GB) gets 409 `QuotaExceeded`. Bytes the team already has answer 200 " +
          "with the existing asset. A body that is not `multipart/form-data` gets 400 `wrong_content_type`, a form that " +
          "cannot be taken (its boundary, parts or fields) 400 `invalid_form`."
      )
  )
  .annotate(OpenApi.Title, "asset uploads")
  .annotate(OpenApi.Description, "Uploading images and videos as multipart forms")
{}
