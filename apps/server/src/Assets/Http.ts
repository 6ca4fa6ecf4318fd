import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Asset, AssetList, AssetUpload, PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { AssetDownloads } from "./Download.js"
import { formContentTypeRefusal } from "./Form.js"
import { AssetImports } from "./Import.js"
import { Assets, type Uploaded } from "./Service.js"
import { AssetUploads } from "./Uploads.js"

/** A new asset is created (201); bytes the team already had answer with its asset (200). */
const answered = ({ asset, created }: Uploaded) => asEncoded(Asset, { status: created ? 201 : 200 })(asset)

export const AssetsHttpLive = HttpApiBuilder.group(PostlineApi, "assets", (handlers) =>
  Effect.gen(function*() {
    const assets = yield* Assets
    const uploads = yield* AssetUploads
    const imports = yield* AssetImports
    return handlers
      .handle("listAssets", ({ path, urlParams }) => Effect.map(assets.list(path.teamId, urlParams), asEncoded(AssetList)))
      .handle("getAsset", ({ path }) => Effect.map(assets.get(path.teamId, path.assetId), asEncoded(Asset)))
      .handle("updateAsset", ({ path, payload }) =>
        Effect.map(assets.update(path.teamId, path.assetId, payload), asEncoded(Asset)))
      .handle("deleteAsset", ({ path }) => Effect.map(assets.remove(path.teamId, path.assetId), asEncoded(Asset)))
      .handle("createAssetUpload", ({ path, payload }) =>
        Effect.map(uploads.create(path.teamId, payload), asEncoded(AssetUpload, { status: 201 })))
      .handle("completeAssetUpload", ({ path }) => Effect.map(uploads.complete(path.teamId, path.uploadId), answered))
      .handle("cancelAssetUpload", ({ path }) => uploads.cancel(path.teamId, path.uploadId))
      .handle("importAsset", ({ path, payload }) => Effect.map(imports.importFrom(path.teamId, payload), answered))
  }))

export const AssetUploadsHttpLive = HttpApiBuilder.group(PostlineApi, "assetUploads", (handlers) =>
  Effect.gen(function*() {
    const assets = yield* Assets
    return handlers.handle("uploadAsset", ({ path, payload, request }) => {
      // The form parser throws on a body that is not a form, or a boundary it cannot read: refused before it is read.
      const refused = formContentTypeRefusal(request.headers["content-type"])
      return refused === undefined ? Effect.map(assets.upload(path.teamId, payload), answered) : refused
    })
  }))

export const AssetContentHttpLive = HttpApiBuilder.group(PostlineApi, "assetContent", (handlers) =>
  Effect.gen(function*() {
    const downloads = yield* AssetDownloads
    const uploads = yield* AssetUploads
    return handlers
      .handleRaw("getAssetContent", ({ path, request, urlParams }) =>
        Effect.map(
          downloads.open(path.teamId, path.assetId, urlParams, request.headers.range),
          ({ body, headers, status }) =>
            HttpServerResponse.stream(body, { status, headers, contentType: headers["content-type"], contentLength: Number(headers["content-length"]) })
        ))
      // Raw: the body streams to storage; nothing reads it whole (the edge's bounded reader runs only when asked).
      .handleRaw("putAssetUpload", ({ path, request, urlParams }) =>
        Effect.as(uploads.receive(path.uploadId, urlParams, request), HttpServerResponse.empty({ status: 204 })))
  }))

/** The media library's HTTP groups, over the storage the edge provides. */
export const MediaHttpLive = Layer.mergeAll(AssetsHttpLive, AssetUploadsHttpLive, AssetContentHttpLive).pipe(
  Layer.provide([Assets.Default, AssetDownloads.Default, AssetUploads.Default, AssetImports.Default])
)
