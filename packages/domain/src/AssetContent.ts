import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AssetUploadId } from "./AssetUploads.js"
import { BadRequest, Conflict, Forbidden, NotFound } from "./Errors.js"
import { oneOf, optional } from "./Fields.js"
import { AssetId, TeamId } from "./Ids.js"
import { TransferRateLimit } from "./RateLimits.js"

const assetPath = Schema.Struct({ teamId: TeamId, assetId: AssetId })

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
          "token. The body is the file, streamed to storage, exactly the upload's `size` bytes (else 400 `size_mismatch`; " +
          "such a PUT may be sent again, as may one cut short by a server that stopped, once MEDIA_LEASE_SECONDS have " +
          "passed). Once one PUT has stored the bytes, or while one is arriving, another gets 409 `upload_already_sent`. " +
          "403 `Forbidden` " +
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
