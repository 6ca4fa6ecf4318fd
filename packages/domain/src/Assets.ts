import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Option, Schema } from "effect"
import { Forbidden, NotFound, PayloadTooLarge, QuotaExceeded, UnsupportedMediaType } from "./Errors.js"
import { codePoints, integer, invalidUnless, oneOf, optional, strict, Text, Timestamp, visibleText } from "./Fields.js"
import { FolderName } from "./Folders.js"
import { AssetId, FolderId, TeamId } from "./Ids.js"
import { ListEnvelope, listQueryFields } from "./Lists.js"

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
  .annotate(OpenApi.Title, "asset content")
  .annotate(OpenApi.Description, "Signed downloads of assets' bytes")
{}
