import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { invalidUnless, optional, strict, Timestamp, visibleText } from "./Fields.js"
import { FolderId, TeamId } from "./Ids.js"
import { ListEnvelope, listQueryFields } from "./Lists.js"

/** Folder and asset names: 1 to 255 characters, not blank; a folder's name has no slash, which paths would read as a level. */
export const FolderName = visibleText({
  blankRanges: "\\s\\u0085\\u200B-\\u200D\\u2060",
  minLength: 1,
  maxLength: 255,
  refusedRanges: "/"
}).annotations({
  identifier: "FolderName",
  description: "1 to 255 characters, not blank, without a slash; unique among the folders of one parent",
  ...invalidUnless("must be a string of 1 to 255 characters, not blank, without a slash")
})

export const Folder = Schema.Struct({
  id: FolderId,
  teamId: TeamId,
  parentId: Schema.NullOr(FolderId).annotations({ description: "The folder it is in; null at the top of the team's library" }),
  name: FolderName,
  createdAt: Timestamp,
  updatedAt: Timestamp
}).annotations({ identifier: "Folder", description: "A folder of a team's media library: folders form a tree by parentId" })
export type Folder = typeof Folder.Type

export const CreateFolder = Schema.Struct({
  name: FolderName,
  parentId: optional(Schema.NullOr(FolderId).annotations({ description: "The folder to make it in; absent or null: the top" }))
}).annotations({ ...strict, identifier: "CreateFolder" })
export type CreateFolder = typeof CreateFolder.Type

export const UpdateFolder = Schema.Struct({
  name: optional(FolderName),
  parentId: optional(Schema.NullOr(FolderId).annotations({ description: "Moves it into this folder; null: to the top" }))
}).annotations({ ...strict, identifier: "UpdateFolder" })
export type UpdateFolder = typeof UpdateFolder.Type

export const FolderListQuery = Schema.Struct({
  ...listQueryFields,
  parentId: optional(FolderId.annotations({ description: "Only the folders directly in this one" }))
}).annotations(strict)
export type FolderListQuery = typeof FolderListQuery.Type

export const FolderList = ListEnvelope(Folder, "FolderList")

const folderPath = Schema.Struct({ teamId: TeamId, folderId: FolderId })

export class FoldersGroup extends HttpApiGroup.make("folders")
  .add(
    HttpApiEndpoint.get("listFolders", "/v1/teams/:teamId/folders")
      .setPath(Schema.Struct({ teamId: TeamId }))
      .setUrlParams(FolderListQuery)
      .addSuccess(FolderList)
      .annotate(OpenApi.Summary, "List folders")
      .annotate(OpenApi.Description, "The team's folders, all of them or those directly in `parentId`. Any member may list them.")
  )
  .add(
    HttpApiEndpoint.post("createFolder", "/v1/teams/:teamId/folders")
      .setPath(Schema.Struct({ teamId: TeamId }))
      .setPayload(CreateFolder)
      .addSuccess(Folder, { status: 201 })
      .annotate(OpenApi.Summary, "Create a folder")
      .annotate(
        OpenApi.Description,
        "Makes a folder at the top or in `parentId`. 409 `folder_name_taken` when its parent already has a folder of " +
          "that name."
      )
  )
  .add(
    HttpApiEndpoint.get("getFolder", "/v1/teams/:teamId/folders/:folderId")
      .setPath(folderPath)
      .addSuccess(Folder)
      .annotate(OpenApi.Summary, "Get a folder")
      .annotate(OpenApi.Description, "One folder of the team. Any member may read it.")
  )
  .add(
    HttpApiEndpoint.patch("updateFolder", "/v1/teams/:teamId/folders/:folderId")
      .setPath(folderPath)
      .setPayload(UpdateFolder)
      .addSuccess(Folder)
      .annotate(OpenApi.Summary, "Rename or move a folder")
      .annotate(
        OpenApi.Description,
        "409 `folder_name_taken` when the new parent already has a folder of that name, or `folder_cycle` when the " +
          "move would put the folder inside itself or one of its own folders."
      )
  )
  .add(
    HttpApiEndpoint.del("deleteFolder", "/v1/teams/:teamId/folders/:folderId")
      .setPath(folderPath)
      .addSuccess(Folder)
      .annotate(OpenApi.Summary, "Delete an empty folder")
      .annotate(OpenApi.Description, "Answers the deleted folder. 409 `folder_not_empty` while it holds folders or assets.")
  )
  .annotate(OpenApi.Title, "folders")
  .annotate(OpenApi.Description, "Folders of a team's media library. Any member of the team's organization, and its API keys, may manage them.")
{}
