// S11 (bench/README.md): what decoding large images costs the server in memory (issue 34). For each format, 8
// uploads of a 7000x7000 image (49 megapixels, under MEDIA_MAX_IMAGE_PIXELS), 4 at once, to the built server under
// `pnpm start`'s flags with the defaults; RSS polled every 50 ms: the server's own, and the server's with the
// processes it started (image decoding runs in one); then idle for `settleSec` and RSS read again. With a memory
// cgroup (Linux, cgroup v1, as root), the server runs in a child cgroup of `limitMb` and an OOM kill is counted.
//
//   node bench/lib/image-memory.mjs [--script apps/server/dist/main.js] [--settle 60] [--limit-mb 1024]
import { spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { startNodeFlags } from "../../apps/server/scripts/start-flags.mjs"
import { freePort, probe } from "./processes.mjs"

const root = fileURLToPath(new URL("../..", import.meta.url))
const MiB = 1024 * 1024
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** The 49-megapixel HEIC (heif-enc, x265): sharp's own build encodes no HEIC, so it is a file of the tests. */
export const largeHeicPath = join(root, "apps/server/test/fixtures/large-7000.heic")

/**
 * A 7000x7000 progressive JPEG and 16-bit PNG made with sharp (blocks of 100 pixels, random colours: small
 * files of many pixels), and the HEIC fixture; each with bytes of its own per upload (a comment, a chunk, a
 * trailing box), so that no upload is answered with an earlier one's asset.
 */
export const makeLargeImages = async (side = 7000) => {
  const sharp = createRequire(join(root, "apps/server/package.json"))("sharp")
  const cells = 70
  const pattern = () =>
    sharp(randomBytes(cells * cells * 3), { raw: { width: cells, height: cells, channels: 3 } }).resize(side, side, { kernel: "nearest" })
  return {
    jpeg: await pattern().jpeg({ progressive: true, quality: 80 }).toBuffer(),
    png16: await pattern().toColourspace("rgb16").png({ compressionLevel: 9 }).toBuffer(),
    heic: readFileSync(largeHeicPath)
  }
}

export const formats = [
  { id: "jpeg", label: "progressive JPEG", type: "image/jpeg", name: "large.jpg" },
  { id: "png16", label: "16-bit PNG", type: "image/png", name: "large.png" },
  { id: "heic", label: "HEIC", type: "image/heic", name: "large.heic" }
]

/**
 * Bytes that differ per upload without changing the image, appended after its end: a HEIF `free` box for HEIC
 * (a file is a list of boxes), else a few bytes after the JPEG's or PNG's end, which their decoders do not read.
 */
export const distinct = (bytes, n, type) => {
  const tag = Buffer.from(`postline-${n}-${randomBytes(8).toString("hex")}`)
  if (type !== "image/heic") return Buffer.concat([bytes, tag])
  const box = Buffer.alloc(8)
  box.writeUInt32BE(8 + tag.length, 0)
  box.write("free", 4, "latin1")
  return Buffer.concat([bytes, box, tag])
}

/** Resident memory of `pid` alone and with all its descendants, in bytes (0 when it has ended). */
export const treeRss = (pid) => {
  const parents = new Map()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
    } catch {
      // ended meanwhile
    }
  }
  const rssOf = (p) => {
    try {
      return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/status`, "utf8"))?.[1] ?? 0) * 1024
    } catch {
      return 0
    }
  }
  const own = rssOf(pid)
  let total = own
  const pending = [pid]
  while (pending.length) {
    const parent = pending.pop()
    for (const [child, ppid] of parents) {
      if (ppid === parent) {
        total += rssOf(child)
        pending.push(child)
      }
    }
  }
  return { own, total }
}

/** A child memory cgroup (v1) of this process's own, limited to `limitBytes`; undefined when none can be made. */
export const makeMemoryCgroup = (limitBytes) => {
  const own = /^\d+:memory:(.*)$/m.exec(readFileSync("/proc/self/cgroup", "utf8"))?.[1]
  if (own === undefined) return undefined
  const path = join("/sys/fs/cgroup/memory", own, `postline-${randomBytes(4).toString("hex")}`)
  try {
    mkdirSync(path)
    writeFileSync(join(path, "memory.limit_in_bytes"), String(limitBytes))
  } catch {
    try {
      rmdirSync(path)
    } catch {
      // never made
    }
    return undefined
  }
  const read = (file) => readFileSync(join(path, file), "utf8")
  return {
    path,
    oomKills: () => Number(/^oom_kill (\d+)/m.exec(read("memory.oom_control"))?.[1] ?? 0),
    /** Usage with page cache, as the kernel counts it against the limit, and its peak. */
    usage: () => Number(read("memory.usage_in_bytes")),
    peak: () => Number(read("memory.max_usage_in_bytes")),
    remove: async () => {
      for (let attempt = 0; attempt < 50; attempt++) {
        try {
          return rmdirSync(path)
        } catch {
          await sleep(100)
        }
      }
    }
  }
}

/** The command that runs `args` inside `cgroup` from its first instruction: what it starts is counted there too. */
export const inCgroup = (cgroup, command, args) =>
  cgroup === undefined
    ? { command, args }
    : { command: "/bin/sh", args: ["-c", `echo $$ > "${join(cgroup.path, "cgroup.procs")}" && exec "$0" "$@"`, command, ...args] }

const adminUser = (script, env) =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(dirname(script), "admin.js"), "users", "create", "--email", `s11-${randomBytes(4).toString("hex")}@example.com`, "--name", "S11"], { env })
    let out = ""
    let err = ""
    child.stdout.on("data", (c) => (out += c))
    child.stderr.on("data", (c) => (err += c))
    child.once("close", (code) => code === 0 ? resolve(JSON.parse(out)) : reject(new Error(err)))
  })

const upload = async (base, token, teamId, format, bytes) => {
  const form = new FormData()
  form.append("file", new Blob([bytes], { type: format.type }), format.name)
  try {
    const response = await fetch(`${base}/v1/teams/${teamId}/assets`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form })
    const text = await response.text()
    return { status: response.status, tag: text === "" ? null : JSON.parse(text)._tag ?? null }
  } catch (error) {
    return { status: 0, tag: String(error.cause?.code ?? error.message) }
  }
}

/** The server under `script` (in `cgroup` when there is one), answering; `stop()` kills it. */
const startInCgroup = async (script, env, cgroup) => {
  const { args, command } = inCgroup(cgroup, process.execPath, [...startNodeFlags(), script])
  const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] })
  const lines = []
  child.stdout.on("data", (c) => lines.push(String(c)))
  child.stderr.on("data", (c) => lines.push(String(c)))
  const server = { child, lines, ended: undefined, base: `http://127.0.0.1:${env.PORT}` }
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(server.ended = { code, signal })))
  server.stop = async () => {
    if (!server.ended) child.kill("SIGKILL")
    await exited
  }
  while ((await probe(Number(env.PORT), "/health", 500)) !== 200) {
    if (server.ended) throw new Error(`S11: the server ended during its start: ${JSON.stringify(server.ended)}\n${lines.join("")}`)
    await sleep(50)
  }
  return server
}

/**
 * One format: a server of its own (embedded database, folder storage) started with `script` in a memory cgroup
 * of `limitMb` when one can be made, `uploads` uploads `atOnce` at a time, RSS polled every 50 ms, then
 * `settleSec` idle. Answers the statuses, peak and settled RSS (the server's, and with its children), the
 * cgroup's peak and OOM kills, and whether the server was still running.
 */
const measureFormat = async ({ script, env, userOnce, format, bytes, settleSec, limitMb, uploads, atOnce, log }) => {
  const cgroup = process.platform === "linux" ? makeMemoryCgroup(limitMb * MiB) : undefined
  if (cgroup === undefined) log(`S11: no memory cgroup could be made (not root, or no cgroup v1 memory controller): the server runs without a limit`)
  const server = await startInCgroup(script, { ...env, PORT: String(await freePort()) }, cgroup)
  try {
    // The admin command creates the user through the running server: the data folder is the server's.
    const user = await userOnce()
    const call = async (path, body) => {
      const response = await fetch(`${server.base}${path}`, { method: "POST", headers: { authorization: `Bearer ${user.token}`, "content-type": "application/json" }, body: JSON.stringify(body) })
      return response.json()
    }
    const organization = await call("/v1/organizations", { name: `S11 ${format.id}` })
    const team = await call("/v1/teams", { organizationId: organization.id, name: "S11" })
    await sleep(3000)
    const pid = server.child.pid
    const idle = treeRss(pid)
    let peakOwn = idle.own
    let peakTotal = idle.total
    const timer = setInterval(() => {
      const now = treeRss(pid)
      peakOwn = Math.max(peakOwn, now.own)
      peakTotal = Math.max(peakTotal, now.total)
    }, 50)
    const startedAt = performance.now()
    const statuses = []
    let next = 0
    await Promise.all(Array.from({ length: atOnce }, async () => {
      while (next < uploads) {
        const n = next++
        statuses.push(await upload(server.base, user.token, team.id, format, distinct(bytes, n, format.type)))
      }
    }))
    const seconds = (performance.now() - startedAt) / 1000
    clearInterval(timer)
    const cgroupPeak = cgroup?.peak()
    if (!server.ended) await sleep(settleSec * 1000)
    const settled = treeRss(pid)
    return {
      format: format.label,
      fileKb: Math.round(bytes.length / 1024),
      statuses: statuses.map((s) => s.status === 201 ? "201" : `${s.status} ${s.tag}`),
      seconds,
      idleMb: idle.own / MiB,
      peakServerMb: peakOwn / MiB,
      peakWithChildrenMb: peakTotal / MiB,
      settledServerMb: settled.own / MiB,
      settledWithChildrenMb: settled.total / MiB,
      cgroupPeakMb: cgroupPeak === undefined ? null : cgroupPeak / MiB,
      oomKills: cgroup?.oomKills() ?? null,
      serverEnded: server.ended ?? null
    }
  } finally {
    await server.stop()
    await cgroup?.remove()
  }
}

/** Every format in turn (see measureFormat), each on a server of its own. */
export const measureImageMemory = async ({ script = join(root, "apps/server/dist/main.js"), settleSec = 60, limitMb = 1024, uploads = 8, atOnce = 4, log = console.log } = {}) => {
  const work = mkdtempSync(join(tmpdir(), "postline-s11-"))
  try {
    const images = await makeLargeImages()
    const env = {
      PATH: process.env.PATH ?? "",
      HOST: "127.0.0.1",
      LOG_LEVEL: "Warn",
      NODE_ENV: "production",
      DATA_DIR: join(work, "data"),
      MEDIA_DIR: join(work, "media"),
      TMPDIR: join(work, "tmp")
    }
    mkdirSync(env.TMPDIR)
    let user
    const userOnce = async () => (user ??= await adminUser(script, env))
    const results = []
    for (const format of formats) {
      const result = await measureFormat({ script, env, userOnce, format, bytes: images[format.id], settleSec, limitMb, uploads, atOnce, log })
      log(`S11 ${format.label}: ${describeImageMemory(result)}`)
      results.push(result)
    }
    return { limitMb: results.some((r) => r.cgroupPeakMb !== null) ? limitMb : null, settleSec, uploads, atOnce, results }
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** Uploads not stored (any answer but 201, or none), and servers that ended: what fails a run. */
export const imageMemoryErrors = (measured) =>
  measured.results.reduce((sum, r) => sum + r.statuses.filter((s) => s !== "201").length + (r.serverEnded ? 1 : 0), 0)

export const describeImageMemory = (r) => {
  const answered = r.statuses.filter((s) => !s.startsWith("0 ")).length
  const counts = Object.entries(r.statuses.reduce((all, s) => ({ ...all, [s]: (all[s] ?? 0) + 1 }), {})).map(([s, n]) => `${n}x ${s}`).join(", ")
  return `${answered}/${r.statuses.length} answered (${counts}) in ${r.seconds.toFixed(1)} s; RSS idle ${r.idleMb.toFixed(0)} MB, ` +
    `peak ${r.peakServerMb.toFixed(0)} MB server / ${r.peakWithChildrenMb.toFixed(0)} MB with its children` +
    `${r.cgroupPeakMb === null ? "" : ` / ${r.cgroupPeakMb.toFixed(0)} MB cgroup (page cache included)`}; ` +
    `settled ${r.settledServerMb.toFixed(0)} MB server / ${r.settledWithChildrenMb.toFixed(0)} MB with children` +
    `${r.oomKills === null ? "" : `; OOM kills ${r.oomKills}`}${r.serverEnded ? `; SERVER ENDED ${JSON.stringify(r.serverEnded)}` : ""}`
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { script: { type: "string" }, settle: { type: "string" }, "limit-mb": { type: "string" } } })
  const measured = await measureImageMemory({
    ...(values.script ? { script: join(process.cwd(), values.script) } : {}),
    ...(values.settle ? { settleSec: Number(values.settle) } : {}),
    ...(values["limit-mb"] ? { limitMb: Number(values["limit-mb"]) } : {})
  })
  console.log(JSON.stringify(measured, null, 2))
}
