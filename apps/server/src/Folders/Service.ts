import {
  Conflict,
  type CreateFolder,
  type FolderId,
  type FolderListQuery,
  NotFound,
  type TeamId,
  type UpdateFolder
} from "@postline/domain"
import { Effect, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { Cursors } from "../Pagination/Cursor.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { FoldersPolicy } from "./Policy.js"
import { FoldersRepo } from "./Repo.js"

export const folderNotFound = (id: FolderId) => new NotFound({ message: `Folder ${id} not found` })

const nameTaken = (name: string) =>
  new Conflict({ message: `The parent folder already has a folder named ${JSON.stringify(name)}`, reason: "folder_name_taken" })

/** A team's folders: a tree by parentId, without cycles, with names unique among one parent's folders. */
export class Folders extends Effect.Service<Folders>()("Folders", {
  effect: Effect.gen(function*() {
    const repo = yield* FoldersRepo
    const policy = yield* FoldersPolicy
    const cursors = yield* Cursors

    const list = (teamId: TeamId, { parentId, ...query }: FolderListQuery) =>
      authorize(policy.canRead(teamId))(() =>
        Effect.flatMap(
          pageRequest({ resource: "folders", filters: { teamId, ...(parentId ? { parentId } : {}) } }, query),
          (request) => repo.list(teamId, parentId, request)
        )).pipe(Effect.provideService(Cursors, cursors))

    const found = (id: FolderId) => Option.match({ onNone: () => folderNotFound(id), onSome: Effect.succeed })

    const get = (teamId: TeamId, id: FolderId) =>
      authorize(policy.canRead(teamId))(() => Effect.flatMap(repo.find(teamId, id), found(id)))

    /** A parent must be a folder of the team (404 naming it); the name must be free under it (409). */
    const requireRoom = (teamId: TeamId, parentId: FolderId | null, name: string, except?: FolderId) =>
      Effect.gen(function*() {
        if (parentId !== null && !(yield* repo.exists(teamId, parentId))) return yield* folderNotFound(parentId)
        if (yield* repo.nameTaken(teamId, parentId, name, except)) return yield* nameTaken(name)
      })

    const create = (teamId: TeamId, { name, parentId = null }: CreateFolder) =>
      authorize(policy.canWrite(teamId, { lock: true }))(() =>
        Effect.gen(function*() {
          yield* repo.lockTree(teamId)
          yield* requireRoom(teamId, parentId, name)
          return yield* repo.insert(teamId, { name, parentId })
        })).pipe(transactionally)

    const update = (teamId: TeamId, id: FolderId, changes: UpdateFolder) =>
      authorize(policy.canWrite(teamId, { lock: true }))(() =>
        Effect.gen(function*() {
          yield* repo.lockTree(teamId)
          const folder = yield* Effect.flatMap(repo.lock(teamId, id), found(id))
          const next = { name: changes.name ?? folder.name, parentId: changes.parentId === undefined ? folder.parentId : changes.parentId }
          if (next.parentId !== null && (yield* repo.isWithin(next.parentId, id))) {
            return yield* new Conflict({
              message: `Folder ${id} cannot be moved into itself or one of its own folders`,
              reason: "folder_cycle"
            })
          }
          yield* requireRoom(teamId, next.parentId, next.name, id)
          return yield* Effect.flatMap(repo.update(teamId, id, next), found(id))
        })).pipe(transactionally)

    const remove = (teamId: TeamId, id: FolderId) =>
      authorize(policy.canWrite(teamId, { lock: true }))(() =>
        Effect.gen(function*() {
          const folder = yield* Effect.flatMap(repo.lock(teamId, id), found(id))
          if (yield* repo.holdsAnything(id)) {
            return yield* new Conflict({
              message: `Folder ${id} is not empty: move or delete its folders and assets first`,
              reason: "folder_not_empty"
            })
          }
          yield* repo.remove(teamId, id)
          return folder
        })).pipe(transactionally)

    return { list, get, create, update, remove } as const
  }),
  dependencies: [FoldersRepo.Default, FoldersPolicy.Default, Cursors.Default]
}) {}
