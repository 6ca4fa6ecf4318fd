// The embedded baseline's database: PGlite in this process, queried directly
// (`pglite.query`, no `pg` wire adapter), behind the two calls of a `pg.Pool`
// that bench/baseline/server.mjs makes: `query(text, values)` and `connect()`.
//
// PGlite is one session: a queue serialises every statement, and `connect()`
// holds the session from BEGIN to COMMIT, as a pool of one would.
//
// Started as apps/server's layerEmbedded starts it (Database/Sql.ts, SyncingNodeFS.ts):
// shared_buffers=16MB, and with PGLITE_FSYNC (default true, as EMBEDDED_FSYNC) a commit
// waits for fsync(), so that the writes of S4 cost what they cost the server.
import { createRequire } from "node:module"
import Fs from "node:fs"
import { fileURLToPath, pathToFileURL } from "node:url"

// PGlite is a dependency of apps/server, not of the root.
const serverPackage = fileURLToPath(new URL("../../apps/server/package.json", import.meta.url))
const require = createRequire(serverPackage)
const load = async (specifier) => import(pathToFileURL(require.resolve(specifier)).href)

const embeddedSettings = ["-c", "shared_buffers=16MB"]
const durableSettings = ["-c", "fsync=on", "-c", "wal_sync_method=fsync"]

/** One-at-a-time: `acquire()` resolves with a release function once every earlier holder released. */
const makeQueue = () => {
  let tail = Promise.resolve()
  return () => {
    let release
    const released = new Promise((resolve) => (release = resolve))
    const acquired = tail.then(() => release)
    tail = tail.then(() => released)
    return acquired
  }
}

export const openPGlite = async (dataDir, { fsync = process.env.PGLITE_FSYNC !== "false" } = {}) => {
  const { PGlite } = await load("@electric-sql/pglite")
  const startParams = [...PGlite.defaultStartParams, ...embeddedSettings]
  let db
  if (fsync) {
    const { NodeFS } = await load("@electric-sql/pglite/nodefs")
    // Emscripten's NODEFS has no fsync: give it the real one (Database/SyncingNodeFS.ts).
    class SyncingNodeFS extends NodeFS {
      async init(pg, options) {
        const { emscriptenOpts } = await super.init(pg, options)
        const syncing = (module) => {
          module.NODEFS.stream_ops.fsync = (stream) => {
            Fs.fsyncSync(stream.nfd)
            return 0
          }
        }
        return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), syncing] } }
      }
    }
    db = await PGlite.create({
      fs: new SyncingNodeFS(dataDir),
      startParams: [...startParams.filter((param) => param !== "-F"), ...durableSettings]
    })
  } else {
    db = await PGlite.create(dataDir, { startParams })
  }

  const acquire = makeQueue()
  return {
    query: async (text, values) => {
      const release = await acquire()
      try {
        return await db.query(text, values)
      } finally {
        release()
      }
    },
    connect: async () => {
      const release = await acquire()
      return { query: (text, values) => db.query(text, values), release }
    },
    on: () => {},
    end: () => db.close()
  }
}
