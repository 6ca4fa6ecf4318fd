// Summarises a V8 .cpuprofile (node --cpu-prof): top frames by self time, and
// self time by module. Frames of the esbuild bundle (apps/server/dist: main-bundle.js
// and the chunks it shares with the admin command) are attributed to their source module through the `// path` comments that
// esbuild writes before each module.
import { existsSync, readFileSync } from "node:fs"
import { basename, join } from "node:path"
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

const sourceOf = (url, lineNumber, bundle) => {
  if (!url) return ""
  if (url.startsWith("node:")) return url
  const file = url.startsWith("file://") ? fileURLToPath(url) : url
  if (/\/apps\/server\/dist\/[^/]+\.js$/.test(file)) {
    // The bundle as it was when profiled, if a copy was kept (it may have been rebuilt since).
    const starts = modulesOf(bundle ? join(bundle, basename(file)) : file)
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
    return found ? `${shorten(found.module)} @dist` : `dist/${basename(file)}`
  }
  const nm = file.lastIndexOf("/node_modules/")
  return nm >= 0 ? file.slice(nm + "/node_modules/".length).replace(/^\.pnpm\/[^/]+\/node_modules\//, "") : file
}

/** Package-level bucket of a source path. */
const packageOf = (source_, functionName) => {
  const source = source_.replace(/ @dist$/, "")
  if (!source) return functionName.startsWith("(") ? functionName : "(native/V8)"
  if (source.startsWith("node:")) return "node:internal"
  const m = /^(@[^/]+\/[^/]+|[^/]+)/.exec(source)
  if (source.startsWith("src/") || source.startsWith("apps/")) return "apps/server"
  if (source.startsWith("packages/")) return "packages/domain"
  return m ? m[1] : source
}

/** `bundle`: a copy of apps/server/dist as it was when profiled (default: a sibling folder `<profile>.dist`). */
export const summarise = (profilePath, top = 20, bundle = existsSync(`${profilePath}.dist`) ? `${profilePath}.dist` : undefined) => {
  const profile = JSON.parse(readFileSync(profilePath, "utf8"))
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parentOf = new Map()
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id)
  const labelOf = (node) => {
    const { functionName, url, lineNumber } = node.callFrame
    return `${functionName || "(anonymous)"} (${sourceOf(url, lineNumber, bundle)}:${lineNumber + 1})`
  }
  /** The nearest caller that is not anonymous/native glue, to tell who pays for a hot native frame. */
  const callerOf = (id) => {
    let parent = parentOf.get(id)
    for (let depth = 0; parent !== undefined && depth < 12; depth++) {
      const node = byId.get(parent)
      const { url, functionName } = node.callFrame
      if (url && functionName && !url.startsWith("node:")) return labelOf(node)
      parent = parentOf.get(parent)
    }
    return parent !== undefined ? labelOf(byId.get(parent)) : "(root)"
  }
  const selfUs = new Map()
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
  }
  let total = 0
  let idle = 0
  const frames = new Map()
  const packages = new Map()
  const modules = new Map()
  for (const [id, us] of selfUs) {
    const node = byId.get(id)
    const { functionName, url, lineNumber, columnNumber } = node.callFrame
    const name = functionName || "(anonymous)"
    total += us
    if (name === "(idle)") {
      idle += us
      continue
    }
    const source = sourceOf(url, lineNumber, bundle)
    const key = `${name} ${source}:${lineNumber + 1}:${columnNumber + 1}`
    const frame = frames.get(key) ?? { name, source, line: lineNumber + 1, us: 0, callers: new Map() }
    frame.us += us
    const caller = callerOf(id)
    frame.callers.set(caller, (frame.callers.get(caller) ?? 0) + us)
    frames.set(key, frame)
    const pkg = packageOf(source, name)
    packages.set(pkg, (packages.get(pkg) ?? 0) + us)
    const module = source ? source.replace(/ @dist$/, "") : name.startsWith("(") ? name : "(native/V8)"
    modules.set(module, (modules.get(module) ?? 0) + us)
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
      source: `${f.source}:${f.line}`,
      callers: [...f.callers.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3)
        .map(([caller, us]) => ({ caller, pctOfFrame: f.us > 0 ? (100 * us) / f.us : 0 }))
    })),
    packages: [...packages.entries()].sort((a, b) => b[1] - a[1]).map(([name, us]) => ({ package: name, selfPct: pct(us) })),
    modules: [...modules.entries()].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([name, us]) => ({ module: name, selfPct: pct(us) }))
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
  lines.push("", "  callers of the top 5 frames:")
  for (const f of summary.frames.slice(0, 5)) {
    lines.push(`    ${f.function} (${f.source}):`)
    for (const c of f.callers) lines.push(`      ${c.pctOfFrame.toFixed(0).padStart(3)}%  ${c.caller}`)
  }
  lines.push("", "  by package:")
  for (const p of summary.packages.slice(0, 12)) lines.push(`${p.selfPct.toFixed(1).padStart(7)}  ${p.package}`)
  lines.push("", "  by module:")
  for (const m of summary.modules.slice(0, 20)) lines.push(`${m.selfPct.toFixed(1).padStart(7)}  ${m.module}`)
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
