import { HttpApiBuilder } from "@effect/platform"
import { Folder, FolderList, PostlineApi } from "@postline/domain"
import { Effect, Layer } from "effect"
import { asEncoded } from "../Http/Encoded.js"
import { Folders } from "./Service.js"

export const FoldersHttpLive = HttpApiBuilder.group(PostlineApi, "folders", (handlers) =>
  Effect.gen(function*() {
    const folders = yield* Folders
    return handlers
      .handle("listFolders", ({ path, urlParams }) => Effect.map(folders.list(path.teamId, urlParams), asEncoded(FolderList)))
      .handle("createFolder", ({ path, payload }) =>
        Effect.map(folders.create(path.teamId, payload), asEncoded(Folder, { status: 201 })))
      .handle("getFolder", ({ path }) => Effect.map(folders.get(path.teamId, path.folderId), asEncoded(Folder)))
      .handle("updateFolder", ({ path, payload }) =>
        Effect.map(folders.update(path.teamId, path.folderId, payload), asEncoded(Folder)))
      .handle("deleteFolder", ({ path }) => Effect.map(folders.remove(path.teamId, path.folderId), asEncoded(Folder)))
  })).pipe(Layer.provide(Folders.Default))
