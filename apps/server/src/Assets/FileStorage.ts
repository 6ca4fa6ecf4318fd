import { NodeStream } from "@effect/platform-node"
import { Effect, Layer, Option, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { createReadStream } from "node:fs"
import { copyFile, mkdir, open, readdir, rename, rm, stat } from "node:fs/promises"
import * as Path from "node:path"
import { MediaStorage, StorageError } from "./Storage.js"

/**
 * Makes the file `path` with `write(temporaryPath)`, writing beside it and renaming into place once the bytes are
 * on disk: a reader sees the old file or the new one, never half of one, and a failed write leaves nothing.
 */
export const writeFileAtomically = async (path: string, write: (temporaryPath: string) => Promise<void>) => {
  await mkdir(Path.dirname(path), { recursive: true })
  const temporaryPath = `${path}.${randomBytes(6).toString("hex")}.partial`
  try {
    await write(temporaryPath)
    const file = await open(temporaryPath, "r+")
    try {
      await file.sync()
    } finally {
      await file.close()
    }
    await rename(temporaryPath, path)
  } catch (error) {
    await rm(temporaryPath, { force: true })
    throw error
  }
}

const isNotFound = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code === "ENOENT"

const partialSuffix = /\.[0-9a-f]{12}\.partial$/

/** The files under `folder`, as keys under `prefix`; a file still being written (`.partial`) is no object yet. */
const filesUnder = (folder: string, prefix: string): Promise<Array<string>> =>
  readdir(folder, { recursive: true, withFileTypes: true }).then(
    (entries) =>
      entries.filter((entry) => entry.isFile() && !partialSuffix.test(entry.name)).map((entry) =>
        prefix + Path.relative(folder, Path.join(entry.parentPath, entry.name)).split(Path.sep).join("/")
      ),
    (error) => isNotFound(error) ? [] : Promise.reject(error)
  )

/** Media storage in a folder: each object is the file at its key under `root`. */
export const layerFileStorage = (root: string): Layer.Layer<MediaStorage> => {
  const resolvedRoot = Path.resolve(root)
  const pathOf = (operation: string, key: string) => {
    const path = Path.resolve(resolvedRoot, key)
    // Keys are made by the server, but one with ".." must still not reach outside the folder.
    return path.startsWith(resolvedRoot + Path.sep)
      ? Effect.succeed(path)
      : Effect.fail(new StorageError({ operation, key, cause: "the key leads outside the media folder" }))
  }
  const attempt = <A>(operation: string, key: string, f: (path: string) => Promise<A>) =>
    Effect.flatMap(pathOf(operation, key), (path) =>
      Effect.tryPromise({ try: () => f(path), catch: (cause) => new StorageError({ operation, key, cause }) }))

  return Layer.succeed(
    MediaStorage,
    MediaStorage.of({
      kind: "filesystem",
      // copyFile copies in the kernel (copy_file_range/sendfile): constant memory whatever the size.
      putFile: (key, source) =>
        attempt("store", key, (path) => writeFileAtomically(path, (temporaryPath) => copyFile(source, temporaryPath))),
      size: (key) =>
        attempt("find the size of", key, (path) =>
          stat(path).then(
            (stats) => Option.some(stats.size),
            (error) => isNotFound(error) ? Option.none() : Promise.reject(error)
          )),
      read: (key, range) =>
        Stream.unwrap(Effect.map(pathOf("read", key), (path) =>
          NodeStream.fromReadable(
            () => createReadStream(path, range ? { start: range.start, end: range.end } : {}),
            (cause) => new StorageError({ operation: "read", key, cause })
          ))),
      copyToFile: (key, destination) =>
        attempt("copy", key, (path) => writeFileAtomically(destination, (temporaryPath) => copyFile(path, temporaryPath))),
      list: (prefix) => attempt("list", prefix, (folder) => filesUnder(folder, prefix)),
      remove: (key) => attempt("remove", key, (path) => rm(path, { force: true })),
      // Postline receives folder uploads itself.
      presignPut: () => Effect.succeed(Option.none())
    })
  )
}
