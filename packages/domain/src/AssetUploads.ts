import { HttpApiSchema } from "@effect/platform"
import { Option, Schema } from "effect"
import { AltText } from "./AltText.js"
import { invalidUnless, optional, strict, Timestamp, WebsiteUrl } from "./Fields.js"
import { FolderName } from "./Folders.js"
import { FolderId, Uuid } from "./Ids.js"

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
