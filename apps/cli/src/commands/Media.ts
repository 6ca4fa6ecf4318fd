import { Args, Command, Options } from "@effect/cli"
import { AltText, Asset, AssetKind, AssetList, FolderId, FolderName } from "@postline/domain"
import { Postline } from "@postline/sdk"
import { Effect, Option } from "effect"
import { openAsBlob } from "node:fs"
import * as Path from "node:path"
import { decodedOption, serverOptions, team, yes } from "../CommonOptions.js"
import { confirmed, costsNothing } from "../Confirmation.js"
import { FileUnreadable } from "../Errors.js"
import { commandGroup } from "../Group.js"
import { Output } from "../Output.js"
import { pageOptions, pageParams, pageText } from "../Pages.js"
import { online } from "../Session.js"
import { fields, orDash, table } from "../Table.js"
import { teamOf } from "../Workspace.js"

const size = (bytes: number) =>
  bytes < 1024 ? `${bytes} B` : bytes < 1024 ** 2 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1024 ** 2).toFixed(1)} MB`

const assetText = (asset: Asset) =>
  fields([
    ["Id", asset.id],
    ["Name", asset.name],
    ["Kind", `${asset.kind} (${asset.contentType})`],
    ["Size", size(asset.size)],
    ["Dimensions", asset.width === null || asset.height === null ? "-" : `${asset.width}×${asset.height}`],
    ["Alt text", orDash(asset.altText)],
    ["Folder", orDash(asset.folderId)],
    ["URL", asset.url]
  ])

/** The file, read from disk as it is sent rather than whole into memory. */
const fileBlob = (file: string) =>
  Effect.tryPromise({
    try: () => openAsBlob(file),
    catch: (error) => new FileUnreadable({ message: `Cannot read ${file}: ${(error as Error).message}` })
  })

const upload = Command.make("upload", {
  ...serverOptions,
  team,
  file: Args.file({ name: "file", exists: "yes" }).pipe(Args.withDescription("An image or video: JPEG, PNG, WebP, GIF, HEIC or MP4")),
  name: decodedOption("name", FolderName).pipe(Options.optional, Options.withDescription("Its name (default: the file's)")),
  altText: decodedOption("alt", AltText).pipe(Options.optional, Options.withDescription("Its alt text, sent with it to providers")),
  folder: decodedOption("folder", FolderId, "id").pipe(Options.optional, Options.withDescription("The folder to put it in (default: the top)")),
  yes
}, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const teamId = yield* teamOf(options.team)
    const file = yield* fileBlob(options.file)
    yield* confirmed({
      yes: options.yes,
      action: "uploading the file",
      preview: Effect.succeed(costsNothing(
        `Upload ${options.file} (${size(file.size)}) to the media library of team ${teamId}: ` +
          "it counts against the organization's storage quota"
      ))
    })
    const form = new FormData()
    form.append("file", file, Path.basename(options.file))
    for (const [field, value] of [["name", options.name], ["altText", options.altText], ["folderId", options.folder]] as const) {
      if (Option.isSome(value)) form.append(field, value.value)
    }
    const asset = yield* client.assetUploads.uploadAsset({ path: { teamId }, payload: form })
    yield* (yield* Output).answer(Asset, asset, assetText)
  }).pipe(online(options))).pipe(
    Command.withDescription("Uploads an image or video to the team's media library (the same bytes again give the asset it has); asks first")
  )

const list = Command.make("list", {
  ...serverOptions,
  ...pageOptions,
  team,
  kind: decodedOption("kind", AssetKind, "image|video").pipe(Options.optional, Options.withDescription("image or video")),
  folder: decodedOption("folder", FolderId, "id").pipe(Options.optional, Options.withDescription("Only the assets directly in this folder"))
}, (options) =>
  Effect.gen(function*() {
    const { client } = yield* Postline
    const teamId = yield* teamOf(options.team)
    const assets = yield* client.assets.listAssets({
      path: { teamId },
      urlParams: {
        ...pageParams(options),
        ...Option.match(options.kind, { onNone: () => ({}), onSome: (kind) => ({ kind }) }),
        ...Option.match(options.folder, { onNone: () => ({}), onSome: (folderId) => ({ folderId }) })
      }
    })
    yield* (yield* Output).answer(AssetList, assets, (page) =>
      pageText(
        table([
          { header: "id", value: (asset) => asset.id },
          { header: "kind", value: (asset) => asset.kind },
          { header: "size", value: (asset) => size(asset.size) },
          { header: "name", value: (asset) => asset.name }
        ], page.data),
        page
      ))
  }).pipe(online(options))).pipe(Command.withDescription("The team's media library"))

export const mediaCommand = commandGroup("media", "The team's media library: upload, list", [upload, list])
