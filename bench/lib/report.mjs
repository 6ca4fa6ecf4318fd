// The printed table and the target checks.

const fmt = (value, digits = 1) => (value === undefined || value === null || Number.isNaN(value) ? "-" : value.toFixed(digits))

export const table = (rows) => {
  const header = ["scenario", "req/s", "p50 ms", "p99 ms", "errors", "baseline req/s", "baseline p99", "ours/baseline", "server CPU ms/req", "db CPU ms/req", "others' CPU"]
  const body = rows.map((r) => [
    r.label,
    fmt(r.rps, 0),
    fmt(r.p50, 2),
    fmt(r.p99, 2),
    String(r.errors),
    r.baseline ? fmt(r.baseline.rps, 0) : "-",
    r.baseline ? fmt(r.baseline.p99, 2) : "-",
    r.ratio !== undefined ? fmt(r.ratio, 2) : "-",
    `${fmt(r.serverCpuMsPerRequest, 2)}${r.baseline ? ` / ${fmt(r.baseline.serverCpuMsPerRequest, 2)}` : ""}`,
    r.mode === "postgres" ? fmt(r.dbCpuMsPerRequest, 2) : "-",
    `${fmt(r.foreignCpuPct, 0)}%`
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)))
  const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

/** A row's errors: ours, the baseline's, at the same load, and the peers' (bench/peers). */
export const rowErrors = (r) =>
  r.errors + (r.baseline?.errors ?? 0) + (r.sameLoad?.errors ?? 0) +
  Object.values(r.peers ?? {}).reduce((sum, p) => sum + p.errors + p.sameLoad.errors, 0)

const alignedTable = (header, body, leftColumns) => {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)))
  const line = (cells) => cells.map((c, i) => (i < leftColumns ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

/**
 * S1, S3 and S4 on every server: the raw baseline, ours and the peers, each with throughput, p99 at the same
 * paced load and server CPU per request, and each of these as a ratio to the baseline's.
 */
export const peersTable = (rows) => {
  const header = ["scenario", "server", "req/s", "x base", "paced req/s", "p99 ms paced", "x base", "server CPU ms/req", "x base", "errors", "others' CPU"]
  const body = []
  for (const r of rows.filter((row) => row.peers && row.baseline && row.sameLoad)) {
    const b = r.baseline
    const l = r.sameLoad
    const line = (server, x, p99, errors) => [
      server === "baseline (node:http + pg)" ? r.id : "",
      server,
      fmt(x.rps, 0),
      fmt(x.rps / b.rps, 2),
      String(l.rate),
      fmt(p99, 2),
      fmt(p99 / l.baselineP99, 2),
      fmt(x.serverCpuMsPerRequest, 3),
      fmt(x.serverCpuMsPerRequest / b.serverCpuMsPerRequest, 2),
      String(errors),
      `${fmt(x.foreignCpuPct, 0)}%`
    ]
    body.push(line("baseline (node:http + pg)", b, l.baselineP99, b.errors + l.baselineErrors))
    body.push(line("ours (Effect)", r, l.p99, r.errors + l.oursErrors))
    for (const p of Object.values(r.peers)) body.push(line(p.name, p, p.sameLoad.p99, p.errors + p.sameLoad.errors))
  }
  return alignedTable(header, body, 2)
}

/** The targets of the issue, each `{ target, value, pass }`. */
export const evaluateTargets = ({ rows, memory, startup }) => {
  const byId = new Map(rows.map((r) => [r.id, r]))
  const targets = []
  const add = (target, value, pass) => targets.push({ target, value, pass })
  // Issue 14: each a ratio to the raw baseline measured in the same run.
  for (const id of ["S1", "S3", "S4"]) {
    const r = byId.get(id)
    if (r?.ratio === undefined) continue
    add(`${id} throughput >= 0.8 x baseline`, `${r.ratio.toFixed(2)}`, r.ratio >= 0.8)
    if (r.sameLoad) {
      const p99 = r.sameLoad.p99 / r.sameLoad.baselineP99
      add(
        `${id} p99 <= 1.25 x baseline's at the same load`,
        `${p99.toFixed(2)}x (${r.sameLoad.p99.toFixed(2)} vs ${r.sameLoad.baselineP99.toFixed(2)} ms at ${r.sameLoad.rate} req/s)`,
        p99 <= 1.25
      )
    }
    const cpu = r.serverCpuMsPerRequest / r.baseline.serverCpuMsPerRequest
    add(
      `${id} server CPU per request <= 1.5 x baseline`,
      `${cpu.toFixed(2)}x (${r.serverCpuMsPerRequest.toFixed(2)} vs ${r.baseline.serverCpuMsPerRequest.toFixed(2)} ms)`,
      cpu <= 1.5
    )
  }
  for (const id of ["S1-embedded", "S4-embedded"]) {
    const r = byId.get(id)
    if (r?.ratio !== undefined) add(`${id} throughput >= 0.8 x the embedded baseline (PGlite directly)`, `${r.ratio.toFixed(2)}`, r.ratio >= 0.8)
  }
  // S8, each run: N posts due at one instant (bench/README.md).
  for (const r of rows.filter((row) => row.burst)) {
    const b = r.burst
    const died = b.processes.filter((p) => p.died)
    add(`${r.id} no process died`, died.length ? died.map((p) => p.name).join(", ") : "none", died.length === 0)
    add(`${r.id} every post published exactly once`, `${b.webhookIds}/${b.n} webhook-ids, ${b.deliveries} deliveries, ${b.duplicates} duplicates`,
      b.webhookIds === b.n && b.posts === b.n && b.deliveries === b.n)
    const limitSec = r.mode === "embedded" ? 40 : 20
    add(`${r.id} p99 lateness <= ${limitSec} s (${b.n} due at once)`, `${(b.latenessMs.p99 / 1000).toFixed(2)} s`, b.latenessMs.p99 <= limitSec * 1000)
    add(`${r.id} peak RSS <= 250 MB per process (from the first schedule on)`, b.processes.map((p) => `${p.peakRssMb.toFixed(0)} MB`).join(", "),
      b.processes.every((p) => p.peakRssMb <= 250))
    if (r.baseline) {
      add(`${r.id} sends/s >= 0.5 x the baseline's (baseline/scheduler.mjs, 2 processes)`,
        `${r.ratio.toFixed(2)}x (${r.rps.toFixed(0)} vs ${r.baseline.rps.toFixed(0)})`, r.ratio >= 0.5)
    }
  }
  // S10: a start with future schedules against one with none (bench/README.md).
  for (const r of rows.filter((row) => row.start)) {
    const s = r.start
    add(`${r.id} start to first send with ${s.futureSchedules.toLocaleString("en")} future schedules <= 1.5 x with none (quickest of ${s.runs})`,
      `${fmt(r.ratio, 2)}x (${fmt(s.quickestMs.loaded, 0)} vs ${fmt(s.quickestMs.none, 0)} ms)`, r.ratio <= 1.5)
  }
  const errors = rows.reduce((sum, r) => sum + rowErrors(r), 0)
  add(`no errors (all scenarios, ours and baseline${rows.some((r) => r.peers) ? " and peers" : ""})`, String(errors), errors === 0)
  for (const [deep, first] of [["S2o", "S1"], ["S2t", "S2t0"]]) {
    const d = byId.get(deep)
    const f = byId.get(first)
    if (d && f) {
      const ratio = d.p50 / f.p50
      add(`${deep} p50 <= 1.2 x ${first} p50 (deep page vs first)`, `${ratio.toFixed(2)}x (${d.p50.toFixed(2)} vs ${f.p50.toFixed(2)} ms)`, ratio <= 1.2)
    }
  }
  if (memory.postgres) add("peak RSS < 200 MB (PostgreSQL mode, under load)", `${memory.postgres.peakMb.toFixed(0)} MB`, memory.postgres.peakMb < 200)
  if (memory.embedded && memory.embeddedBaseline) {
    // The embedded baseline holds PGlite and node:http alone, after the same queries.
    const ratio = memory.embedded.peakMb / memory.embeddedBaseline.peakMb
    add("peak RSS <= 1.15 x the embedded baseline's (embedded mode, under load)",
      `${ratio.toFixed(2)}x (${memory.embedded.peakMb.toFixed(0)} vs ${memory.embeddedBaseline.peakMb.toFixed(0)} MB)`, ratio <= 1.15)
  }
  if (memory.embeddedColdStartPeakMb !== undefined) {
    add("peak RSS < 400 MB creating a new data folder (embedded, start to first answer)",
      `${memory.embeddedColdStartPeakMb.toFixed(0)} MB`, memory.embeddedColdStartPeakMb < 400)
  }
  if (startup.pnpmStartWarmMs !== undefined) {
    add("`pnpm start` to first answer <= 3 s (embedded, warm)", `${startup.pnpmStartWarmMs.toFixed(0)} ms`, startup.pnpmStartWarmMs <= 3000)
    add("`pnpm start` to first answer <= 10 s (first start)", `${startup.pnpmStartFirstMs.toFixed(0)} ms`, startup.pnpmStartFirstMs <= 10_000)
  }
  if (startup.embeddedWarmMs !== undefined) {
    add("start to first answer <= 1.5 s (embedded, warm data folder)", `${startup.embeddedWarmMs.toFixed(0)} ms`, startup.embeddedWarmMs <= 1500)
  }
  return targets
}

export const formatTargets = (targets) =>
  targets.map((t) => `  ${t.pass ? "PASS" : "FAIL"}  ${t.target}: ${t.value}`).join("\n")

/** S9's lines after the table: uploads/s, MB/s, latency and peak RSS of ours and the baseline, and what differs. */
export const describeUploads = (r) => {
  const u = r.upload
  const line = (who, x) =>
    `  ${who.padEnd(8)} ${fmt(x.uploadsPerSec, 2)} uploads/s, ${fmt(x.mbPerSec, 1)} MB/s, p50 ${fmt(x.p50, 0)} ms, p99 ${fmt(x.p99, 0)} ms; ` +
    `peak RSS ${fmt(x.peakMb, 0)} MB (${fmt(x.idleRssMb, 0)} MB idle before the uploads)`
  return [
    `S9, uploads of a ${fmt(u.imageBytes / 2 ** 20, 1)} MB PNG of noise (${u.width}x${u.height}, each with a tEXt chunk of its own), ` +
    `${u.connections} connections, best run of each; MB = 2^20 bytes of the files sent:`,
    line("ours", u.ours),
    line("baseline", u.baseline),
    `  ours/baseline: ${fmt(r.ratio, 2)}x uploads/s. Ours also decodes each image and writes it again with sharp, and a WebP ` +
    `thumbnail, and saves the asset in PostgreSQL; the baseline (baseline/upload.mjs) only streams the bytes to a file while hashing them.` +
    (u.check.length ? `\n  CHECK FAILED: ${u.check.join("; ")}` : "")
  ].join("\n")
}
