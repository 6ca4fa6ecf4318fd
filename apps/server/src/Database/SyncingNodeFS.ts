import { NodeFS } from "@electric-sql/pglite/nodefs"
import Fs from "node:fs"

type PGliteModule = Parameters<NodeFS["init"]>[1]

/** Emscripten's Node file system, as far as its open files go. */
interface EmscriptenNodeFS {
  readonly stream_ops: { fsync?: (stream: { readonly nfd: number }) => number }
}

/**
 * PGlite's Node file system (Emscripten's NODEFS) has no fsync: PostgreSQL's fsync() returns
 * without reaching the disk, so a commit survives the process being killed but not the
 * machine crashing. This one gives it the real fsync. `Fs.fsyncSync` is looked up at each
 * call, so that a test can watch it.
 */
export class SyncingNodeFS extends NodeFS {
  override async init(pg: Parameters<NodeFS["init"]>[0], options: PGliteModule) {
    const { emscriptenOpts } = await super.init(pg, options)
    const syncing = (module: { NODEFS: EmscriptenNodeFS }) => {
      module.NODEFS.stream_ops.fsync = (stream) => {
        Fs.fsyncSync(stream.nfd)
        return 0
      }
    }
    return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), syncing] } as PGliteModule }
  }
}

/**
 * PGlite starts PostgreSQL with `-F` (fsync off). With fsync on, a commit waits for its WAL
 * record to reach the disk, through fsync() (the default, fdatasync(), is a no-op in PGlite).
 */
export const durableStartParams = (params: ReadonlyArray<string>) => [
  ...params.filter((param) => param !== "-F"),
  "-c",
  "fsync=on",
  "-c",
  "wal_sync_method=fsync"
]
