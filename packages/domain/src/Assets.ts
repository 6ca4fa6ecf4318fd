import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Option, Schema } from "effect"
import { BadRequest, Conflict, Forbidden, NotFound, PayloadTooLarge, QuotaExceeded, UnsupportedMediaType } from "./Errors.js"
import { codePoints, integer, invalidUnless, oneOf, optional, strict, Text, Timestamp, visibleText, WebsiteUrl } from "./Fields.js"
import { FolderName } from "./Folders.js"
import { AssetId, FolderId, TeamId, Uuid } from "./Ids.js"
import { ListEnvelope, listQueryFields } from "./Lists.js"
import { TransferRateLimit } from "./RateLimits.js"

export const AssetKind = oneOf("image", "video").annotations({ identifier: "AssetKind", description: "image or video" })
export type AssetKind = typeof AssetKind.Type

export const maxAltTextLength = 1500

/** What a screen reader says for an image: Mastodon takes at most 1,500 characters, Bluesky more. */
export const AltText = visibleText({ blankRanges: "\\s\\u0085\\u200B-\\u200D\\u2060", minLength: 1, maxLength: maxAltTextLength })
  .annotations({
    identifier: "AltText",
    description: `Alt text: 1 to ${maxAltTextLength} characters, not blank`,
    ...invalidUnless(`must be a string of 1 to ${maxAltTextLength} characters, not blank`)
  })

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

/** The text fields of an upload's form, each at most once. */
export const UploadAssetFields = Schema.Struct({
  name: optional(FolderName.annotations({ description: "Its name; by default the file's own name" })),
  altText: optional(AltText),
  folderId: optional(FolderId.annotations({ description: "The folder to put it in; by default the top" }))
}).annotations(strict)
export type UploadAssetFields = typeof UploadAssetFields.Type

/** How many parts and how large a text field an upload's form may have. */
export const uploadFormLimits = { maxParts: 8, maxFieldSize: 8192 } as const

/**
 * The multipart form of an upload: the file in `file` and, in any order, the text fields. Read as a stream:
 * the file goes to storage as it arrives, never whole into memory; the server sets the file's size limits.
 */
export const UploadAssetForm = HttpApiSchema.MultipartStream(
  Schema.Struct({
    file: Schema.Unknown.annotations({
      jsonSchema: { type: "string", format: "binary", description: "The image or video (JPEG, PNG, WebP, GIF, HEIC or MP4)" }
    }),
    ...UploadAssetFields.fields
  }).annotations({ identifier: "UploadAssetForm" }),
  { maxParts: Option.some(uploadFormLimits.maxParts), maxFieldSize: uploadFormLimits.maxFieldSize }
)

export const AssetUploadId = Uuid.pipe(Schema.brand("AssetUploadId")).annotations({
  identifier: "AssetUploadId",
  description: "Presigned upload UUID"
})
export type AssetUploadId = typeof AssetUploadId.Type

const Sha256 = Schema.String.pipe(Schema.pattern(/^[0-9a-fA-F]{64}$/)).annotations({
  identifier: "Sha256",
  description: "Hex SHA-256 of the file (64 hexadecimal digits, any case)",
  ...invalidUnless("must be 64 hexadecimal digits")
})

const uploadSizeDescription = "The file's exact size in bytes; more than MEDIA_MAX_VIDEO_BYTES (300 MB by default) gets 413"

const UploadSize = Schema.Number.pipe(
  Schema.filter((n) => Number.isSafeInteger(n) && n >= 1, {
    jsonSchema: { type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: uploadSizeDescription }
  })
).annotations({ description: uploadSizeDescription, ...invalidUnless("must be a whole number of bytes, at least 1") })

/** How many presigned uploads one team may have open (neither completed nor expired) at once. */
export const maxOpenUploadsPerTeam = 20

export const CreateAssetUpload = Schema.Struct({
  size: UploadSize,
  sha256: optional(Sha256.annotations({ description: "The file's hex SHA-256: when given, completing checks the bytes against it" })),
  ...UploadAssetFields.fields,
  name: optional(FolderName.annotations({ description: "Its name; by default its kind and type, e.g. image.png" }))
}).annotations({ ...strict, identifier: "CreateAssetUpload" })
export type CreateAssetUpload = typeof CreateAssetUpload.Type

export const AssetUpload = Schema.Struct({
  uploadId: AssetUploadId,
  method: Schema.Literal("PUT").annotations({ description: "The method to send the file with" }),
  url: Schema.String.annotations({
    description: "Where to PUT the file's bytes, as the raw body, once: an S3 bucket's presigned URL, or this server's own " +
      "signed URL (absolute when the server has a PUBLIC_URL, else a path on it); it needs no bearer token"
  }),
  headers: Schema.Record({ key: Schema.String, value: Schema.String }).annotations({
    description: "Headers the PUT must carry as given (Content-Length: exactly `size` bytes)"
  }),
  expiresAt: Timestamp.annotations({ description: "When the URL stops working and the upload is forgotten unless completed" })
}).annotations({
  identifier: "AssetUpload",
  description: "A presigned upload: PUT the bytes to `url` with `headers`, then complete it"
})
export type AssetUpload = typeof AssetUpload.Type

export const ImportAsset = Schema.Struct({
  url: WebsiteUrl.annotations({
    description: "The file's https address on the public internet: fetched once, redirects not followed",
    ...invalidUnless("must be an absolute http or https URL")
  }),
  ...UploadAssetFields.fields,
  name: optional(FolderName.annotations({ description: "Its name; by default the last segment of the URL's path" }))
}).annotations({ ...strict, identifier: "ImportAsset" })
export type ImportAsset = typeof ImportAsset.Type

export class BadGateway extends Schema.TaggedError<BadGateway>()(
  "BadGateway",
  { message: Schema.String },
  HttpApiSchema.annotations({
    status: 502,
    description: "The address could not be fetched: it did not answer, answered too slowly, or answered an error status"
  })
) {}

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
        "Answers the deleted asset; its bytes are removed from storage soon after. 409 `Conflict` while a scheduled or " +
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
          `team has at most ${maxOpenUploadsPerTeam} uploads open at once (409 \`Conflict\` beyond).`
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
          "of another SHA-256, get 400 `BadRequest`; these, 413, 415 and a folder gone (404) spend the upload (start a new " +
          "one). Nothing PUT yet, or a PUT still arriving, gets 409 `Conflict`; that and 409 `QuotaExceeded` leave the " +
          "upload to complete again, as does a completion cut short by a server that stopped, once MEDIA_LEASE_SECONDS " +
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
          "open uploads, and any bytes PUT to its URL are removed. 409 `Conflict` while its bytes are arriving or it is " +
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
          "on the public internet are fetched, redirects are not followed: anything else gets 400 `BadRequest` saying why. " +
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
          "with the existing asset."
      )
  )
  .annotate(OpenApi.Title, "asset uploads")
  .annotate(OpenApi.Description, "Uploading images and videos as multipart forms")
{}

export class RangeNotSatisfiable extends Schema.TaggedError<RangeNotSatisfiable>()(
  "RangeNotSatisfiable",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 416, description: "The Range asks for bytes past the end of the file" })
) {}

export const AssetVariant = oneOf("original", "thumbnail").annotations({
  identifier: "AssetVariant",
  description: "The stored copy (default) or its thumbnail"
})

export const AssetContentQuery = Schema.Struct({
  variant: optional(AssetVariant),
  expires: Schema.String.annotations({ description: "When the URL stops working, in Unix seconds, as signed" }),
  signature: Schema.String.annotations({ description: "The server's signature of the path, variant and expiry" })
})

export const AssetUploadContentQuery = Schema.Struct({
  expires: Schema.String.annotations({ description: "When the URL stops working, in Unix seconds, as signed" }),
  signature: Schema.String.annotations({ description: "The server's signature of the upload and expiry" })
})

export class AssetContentGroup extends HttpApiGroup.make("assetContent")
  .add(
    HttpApiEndpoint.get("getAssetContent", "/v1/teams/:teamId/assets/:assetId/content")
      .setPath(assetPath)
      .setUrlParams(AssetContentQuery)
      .addSuccess(Schema.Uint8ArrayFromSelf.pipe(HttpApiSchema.withEncoding({ kind: "Uint8Array", contentType: "application/octet-stream" })))
      .addError(Forbidden)
      .addError(NotFound)
      .addError(RangeNotSatisfiable)
      .annotate(OpenApi.Summary, "Download an asset's bytes")
      .annotate(
        OpenApi.Description,
        "The URL comes signed in an asset's `url` or `thumbnailUrl`: it needs no bearer token, so a provider or a " +
          "webhook receiver may fetch it, until it expires (403 `Forbidden` after, or when it was changed). A single " +
          "`Range: bytes=start-end` gets 206 with those bytes; the answer has the asset's own Content-Type."
      )
  )
  .add(
    HttpApiEndpoint.put("putAssetUpload", "/v1/uploads/:uploadId")
      .setPath(Schema.Struct({ uploadId: AssetUploadId }))
      .setUrlParams(AssetUploadContentQuery)
      .setPayload(
        Schema.Uint8ArrayFromSelf.pipe(HttpApiSchema.withEncoding({ kind: "Uint8Array", contentType: "application/octet-stream" }))
          .annotations({ description: "The file's bytes, exactly as many as the upload declared" })
      )
      .addSuccess(HttpApiSchema.NoContent)
      .addError(BadRequest)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(Conflict)
      .annotate(OpenApi.Summary, "Send a presigned upload's bytes")
      .annotate(
        OpenApi.Description,
        "The URL comes signed in a presigned upload's `url` when the server stores media in a folder: it needs no bearer " +
          "token. The body is the file, streamed to storage, exactly the upload's `size` bytes (else 400 `BadRequest`; " +
          "such a PUT may be sent again, as may one cut short by a server that stopped, once MEDIA_LEASE_SECONDS have " +
          "passed). Once one PUT has stored the bytes, another gets 409 `Conflict`. 403 `Forbidden` " +
          "after the URL expires or when it was changed; 404 for an upload completed or forgotten."
      )
  )
  .middleware(TransferRateLimit)
  .annotate(OpenApi.Title, "asset content")
  .annotate(
    OpenApi.Description,
    "Signed transfers of assets' bytes: downloads, and the one-time PUT of a presigned upload. Each counts against " +
      "its client address's limit of transfers (429 `TooManyRequests` past it, with `Retry-After`)."
  )
{}
