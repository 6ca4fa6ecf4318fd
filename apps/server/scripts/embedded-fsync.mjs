// What making the embedded database's commits durable would cost: sequential one-row commits
// on PGlite as the server opens it (fsync off, and no fsync in its Node file system at all),
// against PGlite with fsync on, WAL synced with fsync(), and fsync() reaching the disk.
// Usage: node apps/server/scripts/embedded-fsync.mjs [commits] [parent folder of the test databases]
import { PGlite } from "@electric-sql/pglite"
import { NodeFS } from "@electric-sql/pglite/nodefs"
import * as Fs from "node:fs"
import * as Path from "node:path"

const commits = Number(process.argv[2] ?? 500)
const parent = process.argv[3] ?? process.cwd()

let fsyncCalls = 0
/** NODEFS has no fsync: PostgreSQL's fsync() returns at once. This one reaches the disk. */
class SyncingNodeFS extends NodeFS {
  async init(pg, options) {
    const result = await super.init(pg, options)
    result.emscriptenOpts.preRun.push((module) => {
      module.NODEFS.stream_ops.fsync = (stream) => {
        fsyncCalls++
        Fs.fsyncSync(stream.nfd)
        return 0
      }
    })
    return result
  }
}

const variants = {
  "as the server runs it (-F, no fsync)": (dir) =>
    PGlite.create(dir, { startParams: [...PGlite.defaultStartParams, "-c", "shared_buffers=16MB"] }),
  "fsync on, wal_sync_method=fsync, fsync reaching the disk": (dir) =>
    PGlite.create({
      fs: new SyncingNodeFS(dir),
      startParams: [
        ...PGlite.defaultStartParams.filter((param) => param !== "-F"),
        "-c", "shared_buffers=16MB", "-c", "fsync=on", "-c", "wal_sync_method=fsync", "-c", "synchronous_commit=on"
      ]
    })
}

for (const [name, open] of Object.entries(variants)) {
  const dir = Fs.mkdtempSync(Path.join(parent, "durability-"))
  try {
    const db = await open(dir)
    await db.exec("CREATE TABLE t (id serial PRIMARY KEY, payload text NOT NULL)")
    fsyncCalls = 0
    const started = performance.now()
    for (let i = 0; i < commits; i++) await db.query("INSERT INTO t (payload) VALUES ($1)", [`row ${i}`])
    const ms = performance.now() - started
    await db.close()
    console.log(JSON.stringify({
      variant: name,
      commits,
      commitsPerSecond: Math.round(commits / (ms / 1000)),
      msPerCommit: Number((ms / commits).toFixed(3)),
      fsyncCallsPerCommit: Number((fsyncCalls / commits).toFixed(2))
    }))
  } finally {
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}
