// Summarises a V8 .cpuprofile (node --cpu-prof): top frames by self time, and
// self time by module. Frames of the esbuild bundle (apps/server/dist/main.js)
// are attributed to their source module through the `// path` comments that
// esbuild writes before each module.
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const bundleModules = new Map()

/** Line index -> source module of a bundle, from esbuild's module comments. */
const modulesOf = (file) => {
  if (bundleModules.has(file)) return bundleModules.get(file)
  let starts = []
  try {
    const lines = readFileSync(file, "utf8").split("\n")
    lines.forEach((line, index) => {
      const m = /^\/\/ ((?:\.\.\/)*(?:node_modules|src|packages|apps)\/\S+\.(?:m?js|ts))$/.exec(line)
      if (m) starts.push({ line: index, module: m[1] })
    })
  } catch {
    starts = []
  }
  bundleModules.set(file, starts)
  return starts
}

const shorten = (module) =>
  module
    .replace(/^(\.\.\/)+/, "")
    .replace(/^node_modules\/\.pnpm\/[^/]+\/node_modules\//, "")
    .replace(/^node_modules\//, "")

const sourceOf = (url, lineNumber) => {
  if (!url) return ""
  if (url.startsWith("node:")) return url
  const file = url.startsWith("file://") ? fileURLToPath(url) : url
  if (file.endsWith("/dist/main.js") || file.endsWith("/dist/admin.js")) {
    const starts = modulesOf(file)
    let lo = 0
    let hi = starts.length - 1
    let found
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      if (starts[mid].line <= lineNumber) {
        found = starts[mid]
        lo = mid + 1
      } else hi = mid - 1
    }
    return found ? shorten(found.module) : "dist/main.js"
  }
  const nm = file.lastIndexOf("/node_modules/")
  return nm >= 0 ? file.slice(nm + "/node_modules/".length).replace(/^\.pnpm\/[^/]+\/node_modules\//, "") : file
}

/** Package-level bucket of a source path. */
const packageOf = (source, functionName) => {
  if (!source) return functionName.startsWith("(") ? functionName : "(native/V8)"
  if (source.startsWith("node:")) return "node:internal"
  const m = /^(@[^/]+\/[^/]+|[^/]+)/.exec(source)
  if (source.startsWith("src/") || source.startsWith("apps/")) return "apps/server"
  if (source.startsWith("packages/")) return "packages/domain"
  return m ? m[1] : source
}

export const summarise = (profilePath, top = 20) => {
  const profile = JSON.parse(readFileSync(profilePath, "utf8"))
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const selfUs = new Map()
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
  }
  let total = 0
  let idle = 0
  const frames = new Map()
  const packages = new Map()
  for (const [id, us] of selfUs) {
    const node = byId.get(id)
    const { functionName, url, lineNumber, columnNumber } = node.callFrame
    const name = functionName || "(anonymous)"
    total += us
    if (name === "(idle)") {
      idle += us
      continue
    }
    const source = sourceOf(url, lineNumber)
    const key = `${name} ${source}:${lineNumber + 1}:${columnNumber + 1}`
    const frame = frames.get(key) ?? { name, source, line: lineNumber + 1, us: 0 }
    frame.us += us
    frames.set(key, frame)
    const pkg = packageOf(source, name)
    packages.set(pkg, (packages.get(pkg) ?? 0) + us)
  }
  const busy = total - idle
  const pct = (us) => (busy > 0 ? (100 * us) / busy : 0)
  return {
    totalMs: total / 1000,
    busyMs: busy / 1000,
    idleMs: idle / 1000,
    frames: [...frames.values()].sort((a, b) => b.us - a.us).slice(0, top).map((f) => ({
      selfPct: pct(f.us),
      selfMs: f.us / 1000,
      function: f.name,
      source: `${f.source}:${f.line}`
    })),
    packages: [...packages.entries()].sort((a, b) => b[1] - a[1]).map(([name, us]) => ({ package: name, selfPct: pct(us) }))
  }
}

export const formatSummary = (summary) => {
  const lines = [
    `busy ${summary.busyMs.toFixed(0)} ms (idle ${summary.idleMs.toFixed(0)} ms); self time as % of busy time`,
    "",
    "  self%   self ms  function  (source)"
  ]
  for (const f of summary.frames) {
    lines.push(`${f.selfPct.toFixed(1).padStart(7)} ${f.selfMs.toFixed(0).padStart(9)}  ${f.function}  (${f.source})`)
  }
  lines.push("", "  by package:")
  for (const p of summary.packages.slice(0, 12)) lines.push(`${p.selfPct.toFixed(1).padStart(7)}  ${p.package}`)
  return lines.join("\n")
}

// `node bench/lib/profile.mjs file.cpuprofile [top]`
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, top] = process.argv.slice(2)
  if (!file) {
    console.error("usage: node bench/lib/profile.mjs <file.cpuprofile> [top]")
    process.exit(2)
  }
  console.log(formatSummary(summarise(file, Number(top ?? 20))))
}
