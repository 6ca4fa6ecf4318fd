#!/usr/bin/env node
// `pnpm bench:attribution` (issue 14): where the server's CPU per request goes on S3,
// `GET /v1/teams?organizationId=…`. A minimal Effect HttpApi server (apps/server/bench/Floor.ts)
// answers S3 with the same three statements and bytes as the baseline; layers of the real server are
// added back one at a time (FLOOR_STEPS), and the real server closes the table. See bench/README.md.
//
//   node bench/attribution.mjs                 8 rounds x 3 s of every step, interleaved (~6-10 min)
//   node bench/attribution.mjs --smoke         tiny population, 1 round x 1 s (checks that it all runs)
//   node bench/attribution.mjs --paced 12      every step at once, 12 req/s each, 3 rounds x 30 s (~4 min): on a
//                                              machine that others keep busy, every step shares the same disturbance
//   options: --rounds N, --duration SECONDS
//
// Exit status: 0 only if every run was free of errors and every floor step answered the baseline's bytes
// with the baseline's statements.
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { parseArgs } from "node:util"
import autocannon from "autocannon"
import { foreignCpuOver, waitForQuiet as waitForQuietBelow, watchForeignCpu } from "./lib/cpu.mjs"
import { createDatabase, dropDatabase, queryPostgres, seedPostgres, serverVersion } from "./lib/db.mjs"
import { drive } from "./lib/load.mjs"
import { freePort, makeCleanup, startServer } from "./lib/processes.mjs"
import { makeBenchUser, populations, seedSql } from "./lib/seed.mjs"
import { normalise, startSqlCapture } from "./lib/sqlcapture.mjs"
import { startNodeFlags } from "../apps/server/scripts/start-flags.mjs"

const { values: flags } = parseArgs({
  options: {
    smoke: { type: "boolean", default: false },
    rounds: { type: "string" },
    duration: { type: "string" },
    paced: { type: "string" },
    help: { type: "boolean", short: "h", default: false }
  },
  strict: true
})
if (flags.help) {
  console.log("usage: node bench/attribution.mjs [--smoke] [--paced REQUESTS_PER_SECOND] [--rounds N] [--duration SECONDS]")
  process.exit(0)
}

const root = fileURLToPath(new URL("..", import.meta.url))
const serverScript = join(root, "apps/server/dist/main.js")
const baselineScript = join(root, "bench/baseline/server.mjs")
const nodeArgs = startNodeFlags()

const smoke = flags.smoke
const paced = flags.paced === undefined ? undefined : Number(flags.paced)
if (paced !== undefined && !(paced > 0)) throw new Error("--paced takes a positive number of requests per second")
const config = {
  connections: 32,
  // Many short interleaved runs rather than a few long ones: on a machine that others use in bursts, some land
  // in a quiet spell, and the lowest CPU per request of a step is its least disturbed.
  durationSec: Number(flags.duration ?? (smoke ? 1 : paced ? 30 : 3)),
  warmupSec: smoke ? 0.3 : 2,
  rounds: Number(flags.rounds ?? (smoke ? 1 : paced ? 3 : 8)),
  foreignLimitPct: 10,
  quietWaitMs: 5_000,
  // Each process's own CPU with no request at all (timers; the real server's scheduler): measured, then
  // taken off each run's CPU, so that it is not charged to requests (it matters most at a low paced rate).
  idleSec: smoke ? 1 : 20,
  retries: 0,
  // S3 is three index lookups: the embedded population (1,000 organizations of the benchmark user with 10 teams
  // each, 10,000 others) gives it the same plans as the full one, and seeds in seconds.
  population: smoke ? populations.smoke : populations.embedded
}

const t0 = performance.now()
const log = (message) => process.stderr.write(`[attribution ${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${message}\n`)

// ---------------------------------------------------------------- cleanup, also on failure and Ctrl-C

const state = { database: undefined, tmp: undefined, pids: [], retriesLeft: config.retries }
const cleanup = makeCleanup(state, log, dropDatabase)

// ---------------------------------------------------------------- the steps

const cumulative = ["auth", "policy", "schema", "log"]
/** Each row: what runs, and which row its delta is taken against. */
const variants = [
  { id: "baseline", label: "baseline (node:http + pg)", kind: "baseline" },
  { id: "floor", label: "floor: HttpApi + @effect/sql-pg, 3 statements", kind: "floor", steps: [], vs: "baseline" },
  { id: "auth", label: "+ auth (security middleware)", kind: "floor", steps: cumulative.slice(0, 1), vs: "floor" },
  { id: "policy", label: "+ policy (Access-like service)", kind: "floor", steps: cumulative.slice(0, 2), vs: "auth" },
  { id: "schema", label: "+ schema (TeamListQuery, TeamList)", kind: "floor", steps: cumulative.slice(0, 3), vs: "policy" },
  { id: "log", label: "+ access log (LOG_LEVEL Info)", kind: "floor", steps: cumulative, vs: "schema" },
  { id: "serverInfo", label: "server, LOG_LEVEL=Info", kind: "server", logLevel: "Info", vs: "log" },
  { id: "server", label: "server, LOG_LEVEL=Warn (as pnpm bench)", kind: "server", logLevel: "Warn", vs: "schema" },
  { id: "select1", label: "floor + SELECT 1 via @effect/sql-pg", kind: "floor", steps: ["select1"], vs: "floor", extra: true },
  { id: "select1raw", label: "floor + SELECT 1 via pg pool.query", kind: "floor", steps: ["select1raw"], vs: "floor", extra: true },
  { id: "tracer", label: "floor with Effect's default tracer on", kind: "floor", steps: ["tracer"], vs: "floor", extra: true }
]

const benchCredentialsKey = randomBytes(32).toString("base64")
const serverEnv = async (databaseUrl, logLevel = "Warn") => ({
  PORT: String(await freePort()),
  NODE_ENV: "production",
  LOG_LEVEL: logLevel,
  OUTBOUND_ALLOW_PRIVATE: "true",
  CREDENTIALS_KEY: benchCredentialsKey,
  RATE_LIMIT_REQUESTS: "100000000",
  DATABASE_URL: databaseUrl
})

const floorScript = () => join(root, "apps/server/dist-bench/Floor.js")

const start = async (variant, databaseUrl, suffix = "") => {
  const logFile = join(state.tmp, `${variant.id}${suffix}.log`)
  const name = `${variant.id}${suffix}`
  const started = variant.kind === "baseline"
    ? startServer({ name, script: baselineScript, env: { PORT: String(await freePort()), DATABASE_URL: databaseUrl }, logFile })
    : variant.kind === "server"
    ? startServer({ name, script: serverScript, nodeArgs, env: await serverEnv(databaseUrl, variant.logLevel), logFile })
    : startServer({
      name,
      script: floorScript(),
      nodeArgs,
      env: { PORT: String(await freePort()), DATABASE_URL: databaseUrl, FLOOR_STEPS: variant.steps.join(",") },
      logFile
    })
  return { ...(await started), logFile }
}

// ---------------------------------------------------------------- parity

const raw = async (server, scenario) => {
  const res = await fetch(server.url + scenario.path, { headers: scenario.headers })
  return { status: res.status, body: await res.text() }
}

/** The scheduler's lock statements run on their own timers (as in run.mjs); SELECT 1 is the extra steps' own. */
const notTheRequests = /\bpg_locks\b|\bpg_(?:try_)?advisory|^\s*SELECT 1\s*$/

const statementsOf = (list) => list.filter(({ sql }) => !notTheRequests.test(sql)).map(normalise).sort()

/** Every floor step and the server against the baseline: same status and bytes; floor steps, the same statements. */
const parityCheck = async (databaseUrl, scenario) => {
  const target = new URL(databaseUrl)
  const pgTarget = { host: target.hostname, port: Number(target.port || 5432) }
  const failures = []
  let reference
  for (const variant of variants) {
    const capture = await startSqlCapture(pgTarget)
    const u = new URL(databaseUrl)
    u.hostname = "127.0.0.1"
    u.port = String(capture.port)
    const server = await start(variant, u.toString(), "-parity")
    try {
      capture.take()
      const answer = await raw(server, scenario)
      // Statements of a request that came after its answer's last byte (none should) are still the request's.
      await new Promise((resolve) => setTimeout(resolve, 50))
      const statements = statementsOf(capture.take())
      if (reference === undefined) {
        reference = { ...answer, statements }
        if (answer.status !== 200) failures.push(`baseline: status ${answer.status} ${answer.body.slice(0, 200)}`)
        continue
      }
      if (answer.status !== reference.status || answer.body !== reference.body) {
        failures.push(`${variant.id}: status ${answer.status} vs ${reference.status}; ` +
          (answer.body === reference.body ? "same body" : `body ${answer.body.slice(0, 300)}`))
      }
      // The server also sends its own (rate limit, etc.): only the floor must send exactly the baseline's.
      if (variant.kind === "floor" && statements.join("\n") !== reference.statements.join("\n")) {
        failures.push(`${variant.id}: different statements:\n    ours ${statements.join("\n    ours ")}` +
          `\n    base ${reference.statements.join("\n    base ")}`)
      }
    } finally {
      await server.stop()
      await capture.close()
    }
  }
  return failures
}

// ---------------------------------------------------------------- measuring

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const cpuContext = () => ({ pids: state.pids, database: state.database })

const waitForQuiet = (maxMs) => waitForQuietBelow(maxMs, config.foreignLimitPct / 2, cpuContext())

const runOnce = async (server, scenario) => {
  const logBytes = statSync(server.logFile).size
  const watch = watchForeignCpu({ ...cpuContext(), serverPid: server.pid })
  const result = await drive({ baseUrl: server.url, scenario, connections: config.connections, durationSec: config.durationSec })
  const cpu = watch.stop()
  result.foreignCpuPct = cpu.foreignPct
  result.serverCpuUsPerRequest = (1000 * (cpu.serverCpuMs - server.idleMsPerSec * result.durationSec)) / Math.max(1, result.requests)
  result.dbCpuUsPerRequest = (1000 * cpu.dbCpuMs) / Math.max(1, result.requests)
  result.logBytesPerRequest = (statSync(server.logFile).size - logBytes) / Math.max(1, result.requests)
  result.contaminated = result.foreignCpuPct > config.foreignLimitPct
  await pause(smoke ? 100 : 500)
  return result
}

const measure = async (server, scenario) => {
  // Others benchmark on this machine too: start when they leave it alone, if they do within a few seconds.
  if (!smoke && (await foreignCpuOver(1000, cpuContext())) > config.foreignLimitPct / 2) await waitForQuiet(config.quietWaitMs)
  const first = await runOnce(server, scenario)
  if (!first.contaminated || state.retriesLeft <= 0) return first
  state.retriesLeft--
  log(`  other processes used ${first.foreignCpuPct.toFixed(0)}% of the machine during that run: waiting for quiet, then repeating it`)
  await waitForQuiet(15_000)
  const second = await runOnce(server, scenario)
  second.errors += first.errors
  second.repeatedAfterForeignPct = first.foreignCpuPct
  return second
}

const describe = (r) =>
  `${r.rps.toFixed(0)} req/s, p99 ${r.p99.toFixed(2)} ms, errors ${r.errors}; CPU/request: server ` +
  `${r.serverCpuUsPerRequest.toFixed(0)} µs, database ${r.dbCpuUsPerRequest.toFixed(0)} µs; log ${r.logBytesPerRequest.toFixed(0)} B/request; ` +
  `others used ${r.foreignCpuPct.toFixed(0)}%${r.contaminated ? " (CONTAMINATED)" : ""}`

/** Per column, the best of the rounds that others left alone: the highest requests/s, the lowest p99 and CPU. */
const bestOf = (runs) => {
  const clean = runs.filter((r) => !r.contaminated)
  const use = clean.length ? clean : runs
  const min = (key) => Math.min(...use.map((r) => r[key]))
  return {
    rps: Math.max(...use.map((r) => r.rps)),
    p99: min("p99"),
    serverCpuUsPerRequest: min("serverCpuUsPerRequest"),
    dbCpuUsPerRequest: min("dbCpuUsPerRequest"),
    logBytesPerRequest: Math.max(...use.map((r) => r.logBytesPerRequest)),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    contaminated: clean.length === 0,
    cleanRuns: clean.length,
    runs: runs.length,
    cpuRuns: runs.map((r) => Math.round(r.serverCpuUsPerRequest))
  }
}

const pad = (s, n, right = false) => (right ? String(s).padEnd(n) : String(s).padStart(n))
const signed = (x) => (x >= 0 ? "+" : "−") + Math.abs(x).toFixed(0)

const formatTable = (rows) => {
  const byId = new Map(rows.map((r) => [r.id, r]))
  const base = byId.get("baseline")
  const header = `| step | quiet runs | req/s | p99 ms | server CPU µs/req | Δ CPU µs/req (vs) | CPU × baseline | req/s × baseline | db CPU µs/req |`
  const lines = [header, "|---|---:|---:|---:|---:|---|---:|---:|---:|"]
  for (const r of rows) {
    const ref = r.vs ? byId.get(r.vs) : undefined
    const delta = ref ? `${signed(r.serverCpuUsPerRequest - ref.serverCpuUsPerRequest)} (${ref.id})` : ""
    lines.push(`| ${r.label} | ${r.cleanRuns}/${r.runs} | ${r.rps.toFixed(0)} | ${r.p99.toFixed(2)} | ` +
      `${r.serverCpuUsPerRequest.toFixed(0)} | ${delta} | ${(r.serverCpuUsPerRequest / base.serverCpuUsPerRequest).toFixed(2)} | ` +
      `${(r.rps / base.rps).toFixed(2)} | ${r.dbCpuUsPerRequest.toFixed(0)} |`)
  }
  return lines.join("\n")
}

// ---------------------------------------------------------------- paced: every step at once, at a fixed rate each

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]

/** `rate` requests a second to one server over 4 connections (autocannon's overallRate). */
const pacedDrive = async (server, scenario, rate, durationSec) => {
  let n = 0
  const latencies = []
  let unexpected = 0
  const instance = autocannon({
    url: server.url,
    connections: 4,
    overallRate: rate,
    duration: durationSec,
    timeout: 10,
    requests: [{
      method: scenario.method,
      path: scenario.path,
      headers: scenario.headers,
      setupRequest: (req) => ({ ...req, ...scenario.setup(n++) })
    }]
  })
  instance.on("response", (_client, statusCode, _bytes, responseTime) => {
    latencies.push(responseTime)
    if (statusCode !== 200) unexpected++
  })
  const result = await instance
  return {
    requests: latencies.length,
    rps: latencies.length / durationSec,
    p99: percentile(Float64Array.from(latencies).sort(), 0.99),
    errors: unexpected + result.errors
  }
}

/** One round: every server driven at once; CPU of each over the same window. */
const pacedRound = async (servers, scenario) => {
  const watches = servers.map((server) => watchForeignCpu({ ...cpuContext(), serverPid: server.pid }))
  const results = await Promise.all(servers.map((server) => pacedDrive(server, scenario, paced, config.durationSec)))
  return results.map((result, i) => {
    const cpu = watches[i].stop()
    const ownCpuMs = cpu.serverCpuMs - servers[i].idleMsPerSec * config.durationSec
    return { ...result, foreignCpuPct: cpu.foreignPct, serverCpuUsPerRequest: (1000 * ownCpuMs) / Math.max(1, result.requests) }
  })
}

const formatPacedTable = (rows) => {
  const byId = new Map(rows.map((r) => [r.id, r]))
  const base = byId.get("baseline")
  const lines = [
    "| step | req/s | p99 ms | server CPU µs/req (median; rounds) | Δ CPU µs/req (vs) | CPU × baseline |",
    "|---|---:|---:|---|---|---:|"
  ]
  for (const r of rows) {
    const ref = r.vs ? byId.get(r.vs) : undefined
    const delta = ref ? `${signed(r.serverCpuUsPerRequest - ref.serverCpuUsPerRequest)} (${ref.id})` : ""
    lines.push(`| ${r.label} | ${r.rps.toFixed(0)} | ${r.p99.toFixed(1)} | ${r.serverCpuUsPerRequest.toFixed(0)} ` +
      `(${r.cpuRuns.join(", ")}) | ${delta} | ${(r.serverCpuUsPerRequest / base.serverCpuUsPerRequest).toFixed(2)} |`)
  }
  return lines.join("\n")
}

// ---------------------------------------------------------------- main

const main = async () => {
  state.tmp = mkdtempSync(join(tmpdir(), "postline-attribution-"))
  log("bundling the server (apps/server/dist) and the floor (apps/server/dist-bench)")
  const { bundleFloor, bundleServer } = await import(pathToFileURL(join(root, "apps/server/scripts/build.mjs")).href)
  await bundleServer()
  await bundleFloor()

  const database = await createDatabase()
  state.database = database.name
  const postgres = await serverVersion(database.url)
  log(`database ${database.name} (PostgreSQL ${postgres})`)
  const migrating = await start({ id: "server-migrating", kind: "server", logLevel: "Warn" }, database.url)
  await migrating.stop()
  const user = makeBenchUser()
  let t = performance.now()
  await seedPostgres(database.url, seedSql(config.population, user))
  log(`seeded ${JSON.stringify(config.population)} in ${((performance.now() - t) / 1000).toFixed(1)} s`)
  const orgIds = (await queryPostgres(
    database.url,
    "SELECT organization_id AS id FROM memberships WHERE user_id = $1 ORDER BY md5(organization_id::text) LIMIT 100",
    [user.id]
  )).map((r) => r.id)
  const scenario = {
    label: "S3 GET /v1/teams?organizationId=",
    method: "GET",
    path: `/v1/teams?organizationId=${orgIds[0]}`,
    headers: { authorization: `Bearer ${user.token}` },
    setup: (n) => ({ path: `/v1/teams?organizationId=${orgIds[n % orgIds.length]}` })
  }

  const failures = await parityCheck(database.url, scenario)
  if (failures.length) for (const f of failures) log(`PARITY FAILURE ${f}`)
  else log("parity: every step and the server answer S3 with the baseline's status and bytes; every floor step sends the baseline's statements")

  const servers = []
  for (const variant of variants) servers.push(await start(variant, database.url))
  state.pids = servers.map((s) => s.pid)
  const quiet = await foreignCpuOver(1000, cpuContext())
  if (quiet > config.foreignLimitPct) log(`WARNING: other processes use ${quiet.toFixed(0)}% of the machine`)
  log(`warming up (${config.warmupSec} s each)`)
  for (const server of servers) {
    await drive({ baseUrl: server.url, scenario, connections: config.connections, durationSec: config.warmupSec })
  }
  await pause(1000)
  const idle = servers.map((server) => watchForeignCpu({ ...cpuContext(), serverPid: server.pid }))
  await pause(config.idleSec * 1000)
  for (const [i, watch] of idle.entries()) servers[i].idleMsPerSec = watch.stop().serverCpuMs / config.idleSec
  log(`idle CPU, ms/s: ${variants.map((v, i) => `${v.id} ${servers[i].idleMsPerSec.toFixed(1)}`).join(", ")} (taken off every run's CPU)`)

  if (paced !== undefined) {
    const rounds = []
    for (let round = 0; round < config.rounds; round++) {
      rounds.push(await pacedRound(servers, scenario))
      log(`round ${round + 1}: others used ${rounds.at(-1)[0].foreignCpuPct.toFixed(0)}% of the machine; CPU µs/request ` +
        variants.map((v, i) => `${v.id} ${rounds.at(-1)[i].serverCpuUsPerRequest.toFixed(0)}`).join(", "))
    }
    for (const server of servers) await server.stop()
    const rows = variants.map((variant, i) => {
      const runs = rounds.map((round) => round[i])
      return {
        ...variant,
        rps: median(runs.map((r) => r.rps)),
        p99: median(runs.map((r) => r.p99)),
        serverCpuUsPerRequest: median(runs.map((r) => r.serverCpuUsPerRequest)),
        cpuRuns: runs.map((r) => Math.round(r.serverCpuUsPerRequest)),
        errors: runs.reduce((sum, r) => sum + r.errors, 0)
      }
    })
    const foreign = rounds.map((round) => round[0].foreignCpuPct.toFixed(0) + "%").join(", ")
    console.log(`\nS3 attribution, paced: every step at once, ${paced} req/s each over 4 connections, ${config.durationSec} s, ` +
      `${config.rounds} rounds (others used ${foreign} of the machine), PostgreSQL ${postgres}, Node ${process.version} ${nodeArgs.join(" ")}\n`)
    console.log(formatPacedTable(rows))
    console.log(`\nidle CPU (ms/s, taken off): ${variants.map((v, i) => `${v.id} ${servers[i].idleMsPerSec.toFixed(1)}`).join(", ")}`)
    if (failures.length) console.log(`parity FAILED:\n  ${failures.join("\n  ")}`)
    const errors = rows.reduce((sum, r) => sum + r.errors, 0)
    if (errors) console.log(`errors: ${rows.filter((r) => r.errors).map((r) => `${r.id} ${r.errors}`).join(", ")}`)
    return errors === 0 && failures.length === 0 ? 0 : 1
  }

  const runs = variants.map(() => [])
  for (let round = 0; round < config.rounds; round++) {
    for (const [i, variant] of variants.entries()) {
      runs[i].push(await measure(servers[i], scenario))
      log(`round ${round + 1} ${variant.id.padEnd(10)} ${describe(runs[i].at(-1))}`)
    }
  }
  for (const server of servers) await server.stop()

  const rows = variants.map((variant, i) => ({ ...variant, ...bestOf(runs[i]) }))
  console.log(`\nS3 attribution: ${config.connections} connections, ${config.durationSec} s per run, best of ${config.rounds} ` +
    `(interleaved), PostgreSQL ${postgres}, Node ${process.version} ${nodeArgs.join(" ")}\n`)
  console.log(formatTable(rows))
  console.log(`\nidle CPU (ms/s, taken off): ${variants.map((v, i) => `${v.id} ${servers[i].idleMsPerSec.toFixed(1)}`).join(", ")}`)
  console.log(`CPU per request in each run: ${rows.map((r) => `${r.id} ${r.cpuRuns.join("/")}`).join(", ")}`)
  console.log(`access log written per request: ${rows.map((r) => `${r.id} ${r.logBytesPerRequest.toFixed(0)} B`).join(", ")}`)
  if (failures.length) console.log(`parity FAILED:\n  ${failures.join("\n  ")}`)
  const errors = rows.reduce((sum, r) => sum + r.errors, 0)
  if (errors) console.log(`errors: ${rows.filter((r) => r.errors).map((r) => `${r.id} ${r.errors}`).join(", ")}`)
  return errors === 0 && failures.length === 0 ? 0 : 1
}

main().then(
  async (code) => {
    await cleanup()
    log(`done in ${((performance.now() - t0) / 1000).toFixed(0)} s`)
    process.exit(code)
  },
  async (error) => {
    log(`FAILED: ${error.stack ?? error}`)
    await cleanup()
    process.exit(1)
  }
)
