#!/usr/bin/env node
// `pnpm bench` (= pnpm build && node bench/run.mjs): the server against the
// raw node:http + pg baseline of bench/baseline/server.mjs. See bench/README.md.
//
//   node bench/run.mjs            full run (~5-6 min): prints the table, writes bench/results/latest.json
//   node bench/run.mjs --smoke    tiny population, 0.5 s per scenario (CI guard; writes results/smoke.json)
//   node bench/run.mjs --profile --scenarios S1
//                                 the server under `node --cpu-prof`, ours only; prints the top frames
//   node bench/run.mjs --no-peers without the peers (bench/peers: Fastify + pg, NestJS + Prisma) in S1, S3, S4
//   node bench/run.mjs --smoke --scenarios S8 --scheduled-posts 100
//                                 S8 alone (posts due at one instant), with 100 posts
//   node bench/run.mjs --scenarios S9
//                                 S9 alone: uploads of a 10 MB PNG, ours and bench/baseline/upload.mjs
//   node bench/run.mjs --scenarios S10
//                                 S10 alone: a start with 100,000 future schedules against one with none
//   node bench/run.mjs --scenarios S11
//                                 S11 alone: 49-megapixel uploads, RSS peak and settled per format (bench/lib/image-memory.mjs)
//   node bench/run.mjs --scenarios S12
//                                 S12 alone: how reading a post's text grows with its length (bench/lib/text-scaling.mjs)
//
// Exit status: 0 only if every scenario ran with zero errors and the baseline
// (and each peer) ran the same statements and answered the same bytes as the
// server (as the baseline). Targets are reported, not enforced.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { randomBytes } from "node:crypto"
import { createServer as createHttpServer } from "node:http"
import { cpus, totalmem, tmpdir, release } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { parseArgs } from "node:util"
import { createDatabase, dropDatabase, loadPGlite, queryPostgres, seedPGlite, seedPostgres, serverVersion } from "./lib/db.mjs"
import { foreignCpuOver, waitForQuiet as waitForQuietBelow, watchForeignCpu } from "./lib/cpu.mjs"
import { drive, pace } from "./lib/load.mjs"
import { normalise, startSqlCapture } from "./lib/sqlcapture.mjs"
import { freePort, makeCleanup, resetPeakMemory, startServer } from "./lib/processes.mjs"
import { formatSummary, summarise } from "./lib/profile.mjs"
import { startReceiver, summariseBurst } from "./lib/burst.mjs"
import { peakMemory } from "./lib/heap-sampler.mjs"
import { addSends, createSends } from "./baseline/scheduler.mjs"
import { buildPeers, peerDefs, peerScenarios, peerVersions } from "./lib/peers.mjs"
import { describeUploads, evaluateTargets, formatTargets, peersTable, rowErrors, table } from "./lib/report.mjs"
import { makeBenchUser, populations, seedSql } from "./lib/seed.mjs"
import { checkUpload, driveUploads, makeNoisePng, MiB } from "./lib/upload.mjs"
import { describeImageMemory, imageMemoryErrors, measureImageMemory } from "./lib/image-memory.mjs"
import { measurePnpmStart } from "./lib/start.mjs"
import { describeTextScaling, measureTextScaling } from "./lib/text-scaling.mjs"
import { startNodeFlags } from "../apps/server/scripts/start-flags.mjs"

const { values: flags } = parseArgs({
  options: {
    smoke: { type: "boolean", default: false },
    profile: { type: "boolean", default: false },
    scenarios: { type: "string" },
    duration: { type: "string" },
    rounds: { type: "string" },
    "no-embedded": { type: "boolean", default: false },
    population: { type: "string" },
    before: { type: "string" },
    "before-node-args": { type: "string" },
    "before-node": { type: "string" },
    "embedded-only": { type: "boolean", default: false },
    "no-peers": { type: "boolean", default: false },
    "scheduled-posts": { type: "string" },
    "future-schedules": { type: "string" },
    help: { type: "boolean", short: "h", default: false }
  },
  strict: true
})
if (flags.help) {
  console.log(`usage: node bench/run.mjs [--smoke] [--profile] [--scenarios S1,S3,...] [--duration SECONDS] [--rounds N] [--no-embedded] [--population smoke|embedded|full] [--before BUNDLE [--before-node-args="FLAGS"] [--before-node PATH]] [--no-peers] [--scheduled-posts N[,N...]] [--future-schedules N]
scenarios: S1 S2o S2t S2t0 S3 S4 S5 S6 S7 (PostgreSQL), S1/S4 again with the embedded database, S8, S9, S10 and S12
S8: N posts due at one instant (--scheduled-posts; 1000,10000, or 100 with --smoke) on two PostgreSQL processes,
    the baseline's two (bench/baseline/scheduler.mjs) and one embedded process
S9: uploads of a 10 MB PNG (1 MB with --smoke), 8 connections, ours (PostgreSQL, folder storage) and
    bench/baseline/upload.mjs (node:http streaming the file to a folder, hashing it)
S10: spawn to the first send of a post due at start, with N future schedules (--future-schedules; 100000, or
    1000 with --smoke) and with none, 5 starts of each (1 with --smoke), PostgreSQL and embedded
S11: 8 uploads of a 7000x7000 progressive JPEG, 16-bit PNG and HEIC each, 4 at once, embedded database, the
    server in a 1 GiB memory cgroup when one can be made: RSS peak and 60 s later (5 s with --smoke); not in
    --smoke unless named
S12: CPU time of reading a text 16 times longer (links, Mastodon length, graphemes), this process, no server
peers (S1, S3, S4 only; --no-peers leaves them out): Fastify + pg, NestJS (Express) + Prisma 7 (bench/peers)`)
  process.exit(0)
}

const root = fileURLToPath(new URL("..", import.meta.url))
const serverScript = join(root, "apps/server/dist/main.js")
const serverNodeArgs = startNodeFlags()
const startOurServer = ({ nodeArgs = [], ...options }) =>
  startServer({ script: serverScript, nodeArgs: [...serverNodeArgs, ...nodeArgs], ...options })
const baselineScript = join(root, "bench/baseline/server.mjs")
const baselineSchedulerScript = join(root, "bench/baseline/scheduler.mjs")
const baselineUploadScript = join(root, "bench/baseline/upload.mjs")
const heapSampler = pathToFileURL(join(root, "bench/lib/heap-sampler.mjs")).href
const resultsDir = join(root, "bench/results")

const smoke = flags.smoke
const config = {
  mode: flags.profile ? "profile" : smoke ? "smoke" : "full",
  connections: 32,
  // The smoke only checks that every scenario runs and answers right: half a second of load is enough for that.
  durationSec: Number(flags.duration ?? (smoke ? 0.5 : 10)),
  warmupSec: smoke ? 0.2 : 1,
  // ours, baseline, ours, baseline: the best of each is reported.
  rounds: Number(flags.rounds ?? (smoke || flags.profile ? 1 : 2)),
  warmStarts: smoke ? 1 : 3,
  // A run during which other processes used more than this share of the
  // machine is repeated once (up to `retries` times in all) after waiting for quiet.
  foreignLimitPct: 10,
  retries: smoke ? 0 : 3,
  population: flags.population ? populations[flags.population] : smoke ? populations.smoke : populations.full,
  embeddedPopulation: smoke ? populations.smoke : populations.embedded,
  embedded: !flags.profile && !flags["no-embedded"],
  // The peers (bench/peers) in S1, S3 and S4, beside ours and the baseline.
  peers: !flags.profile && !flags["no-peers"] && !flags["embedded-only"],
  // S8: N posts to one webhook account, all due at one instant, for each N of `sizes`.
  burst: {
    sizes: flags["scheduled-posts"]?.split(",").map(Number) ?? (smoke ? [100] : [1_000, 10_000]),
    // Schedule requests at once, and sends under way per process (ours: SCHEDULER_CONCURRENCY; the baseline's).
    concurrency: 16,
    // How often a process with nothing due looks again (ours: SCHEDULER_POLL_MS; the baseline's).
    pollMs: 250,
    // Drafts scheduled a day ahead first, to measure how fast the processes take schedules.
    probePosts: 200
  },
  // S7 publishes one draft per request, never twice: more than a run can use.
  publishDrafts: smoke ? 3_000 : 40_000,
  // S9: uploads of a PNG of noise of this size, one at a time on each connection.
  upload: { imageBytes: (smoke ? 1 : 10) * MiB, connections: 8 },
  // S10: starts with this many future schedules against starts with none, in turn; the quickest of each.
  start: {
    futureSchedules: Number(flags["future-schedules"] ?? (smoke ? 1_000 : 100_000)),
    runs: smoke ? 1 : 5,
    // A start's first look for due posts is at once; later ones, every this many ms.
    pollMs: 100,
    deadlineMs: 60_000
  }
}
const only = flags.scenarios ? new Set(flags.scenarios.split(",").map((s) => s.trim())) : undefined
const wanted = (id) => only === undefined || only.has(id)
const postgresIds = ["S1", "S2o", "S2t", "S2t0", "S3", "S4", "S5", "S6", "S7"]

const t0 = performance.now()
const log = (message) => process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${message}\n`)

// ---------------------------------------------------------------- cleanup, also on failure and Ctrl-C

const state = { database: undefined, tmp: undefined, pids: [], closers: [], retriesLeft: config.retries }
const cleanup = makeCleanup(state, log, dropDatabase)

// ---------------------------------------------------------------- scenarios

/** Scenario definitions; `fixtures` holds the ids and cursors found after seeding. */
const scenarioDefs = (user, fixtures) => {
  const auth = { authorization: `Bearer ${user.token}` }
  const json = { ...auth, "content-type": "application/json" }
  return {
    S1: { label: "S1 GET /v1/organizations?limit=25", read: true, method: "GET", path: "/v1/organizations?limit=25", headers: auth },
    S2o: {
      label: `S2 organizations, deep cursor (${fixtures.deepOrgs} in)`,
      read: true,
      method: "GET",
      path: `/v1/organizations?limit=25&cursor=${encodeURIComponent(fixtures.deepOrgCursor)}`,
      headers: auth
    },
    S2t: {
      label: `S2 teams?limit=100, deep cursor (${fixtures.deepTeams} in)`,
      read: true,
      method: "GET",
      path: `/v1/teams?limit=100&cursor=${encodeURIComponent(fixtures.deepTeamCursor)}`,
      headers: auth
    },
    S2t0: { label: "S2 teams?limit=100, first page (reference)", read: true, method: "GET", path: "/v1/teams?limit=100", headers: auth },
    S3: {
      label: "S3 GET /v1/teams?organizationId=",
      read: true,
      method: "GET",
      path: `/v1/teams?organizationId=${fixtures.orgIds[0]}`,
      headers: auth,
      setup: (n) => ({ path: `/v1/teams?organizationId=${fixtures.orgIds[n % fixtures.orgIds.length]}` })
    },
    S4: {
      label: "S4 PATCH /v1/teams/{teamId} {name}",
      method: "PATCH",
      path: `/v1/teams/${fixtures.teamIds[0]}`,
      headers: json,
      body: JSON.stringify({ name: "Team 0" }),
      setup: (n) => ({
        path: `/v1/teams/${fixtures.teamIds[n % fixtures.teamIds.length]}`,
        body: JSON.stringify({ name: `Team ${n} renamed` })
      })
    },
    S5: {
      label: "S5 POST /v1/organizations",
      method: "POST",
      path: "/v1/organizations",
      headers: json,
      body: JSON.stringify({ name: "Org 0" }),
      setup: (n) => ({ body: JSON.stringify({ name: `Bench created org ${n}` }) })
    },
    // Each request publishes another draft, once: the counter runs on across warm-up and rounds.
    S7: {
      label: "S7 POST …/posts/{postId}/post-now (webhook)",
      method: "POST",
      path: "/",
      headers: json,
      body: "",
      setup: () => {
        const { accountId, postIds, teamId } = fixtures.publishing
        const postId = postIds[fixtures.publishing.next++ % postIds.length]
        return { path: `/v1/teams/${teamId}/posts/${postId}/post-now`, body: JSON.stringify({ socialAccountIds: [accountId] }) }
      }
    },
    S6: {
      label: "S6 invalid token (401)",
      read: true,
      method: "GET",
      path: "/v1/organizations?limit=25",
      // Well-formed, so that it is looked up like a real one.
      headers: { authorization: `Bearer plt_${"x".repeat(43)}` },
      expectStatus: 401
    }
  }
}

const fixtureQueries = {
  orgIds: "SELECT organization_id AS id FROM memberships WHERE user_id = $1 ORDER BY md5(organization_id::text) LIMIT 100",
  teamIds: `SELECT t.id FROM teams t JOIN memberships m ON m.organization_id = t.organization_id
            WHERE m.user_id = $1 AND m.role IN ('owner', 'admin') ORDER BY md5(t.id::text) LIMIT 1000`
}

const getJson = async (server, path, token) => {
  const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${token}` } })
  if (res.status !== 200) throw new Error(`${server.name} GET ${path}: ${res.status} ${await res.text()}`)
  return res.json()
}

/** Follows nextCursor until `target` items lie before the cursor. */
const cursorAt = async (server, path, token, target) => {
  let position = 0
  let cursor
  while (position < target) {
    const limit = Math.min(100, target - position)
    const page = await getJson(server, `${path}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, token)
    if (!page.nextCursor) throw new Error(`${path}: the list ends before ${target} items`)
    cursor = page.nextCursor
    position += page.data.length
  }
  return cursor
}

// ---------------------------------------------------------------- parity: the baseline answers with the same bytes

const raw = async (server, request) => {
  const res = await fetch(server.url + request.path, { method: request.method, headers: request.headers, body: request.body })
  return { status: res.status, body: await res.text() }
}

const firstDifference = (a, b, nameA = "ours", nameB = "baseline") => {
  let i = 0
  while (i < a.length && a[i] === b[i]) i++
  return `at byte ${i}: ${nameA} …${a.slice(Math.max(0, i - 40), i + 60)}… ${nameB} …${b.slice(Math.max(0, i - 40), i + 60)}…`
}

/** Lock statements of the scheduler run on their own timers, whatever the request: they are not the request's work. */
const engineHousekeeping = /\bpg_locks\b|\bpg_(?:try_)?advisory/

/** Differences between two lists of statements, compared as multisets (parallel queries may come in any order). */
const statementDifferences = (ours, baseline, oursName = "the server") => {
  const count = (list) => list.filter(({ sql }) => !engineHousekeeping.test(sql)).map(normalise).reduce((m, s) => m.set(s, (m.get(s) ?? 0) + 1), new Map())
  const [a, b] = [count(ours), count(baseline)]
  const out = []
  for (const [text, n] of a) if ((b.get(text) ?? 0) < n) out.push(`only ${oursName} runs: ${text.slice(0, 400)}`)
  for (const [text, n] of b) if ((a.get(text) ?? 0) < n) out.push(`only the baseline runs: ${text.slice(0, 400)}`)
  return out
}

/**
 * Each request through both servers: same status, same body bytes, and the
 * same statements with the same parameters. `ours` is the server, or a peer
 * (`ours.name`); `ids`, the read scenarios compared besides S4.
 */
const parityCheck = async (ours, baseline, defs, teamId, ids = ["S1", "S2o", "S2t", "S2t0", "S3", "S6"]) => {
  const failures = []
  // The scheduler's and the webhook deliveries' polls run on their own timers and now and then fall inside a
  // request's window: a difference counts only when it comes back every time the request is repeated.
  const compare = async (name, request, mask = (s) => s, tries = 3) => {
    ours.capture.take()
    const a = await raw(ours.server, request)
    const oursStatements = ours.capture.take()
    baseline.capture.take()
    const b = await raw(baseline.server, request)
    const baseStatements = baseline.capture.take()
    const [ma, mb] = [mask(a.body), mask(b.body)]
    if (a.status !== b.status || ma !== mb) {
      failures.push(`${name}: status ${a.status} vs ${b.status}; ${ma === mb ? "same body" : firstDifference(ma, mb, ours.name)}`)
      return
    }
    const differences = statementDifferences(oursStatements, baseStatements, ours.name)
    if (differences.length === 0) return
    if (tries > 1) return compare(name, request, mask, tries - 1)
    failures.push(`${name}: different statements:\n    ${differences.join("\n    ")}`)
  }
  for (const id of ids) await compare(id, defs[id])
  // The same change through both: only updatedAt (set by now()) may differ.
  const patch = { ...defs.S4, path: `/v1/teams/${teamId}`, body: JSON.stringify({ name: "Parity check" }) }
  await compare("S4", patch, (s) => s.replace(/"updatedAt":"[^"]*"/g, "\"updatedAt\":\"…\""))
  return failures
}

// ---------------------------------------------------------------- measuring

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const cpuContext = () => ({ pids: state.pids, database: state.database })

const waitForQuiet = (maxMs) => waitForQuietBelow(maxMs, config.foreignLimitPct / 2, cpuContext())

const runOnce = async (server, def, durationSec, rate) => {
  const watch = watchForeignCpu({ ...cpuContext(), serverPid: server.pid })
  const load = { baseUrl: server.url, scenario: def, connections: config.connections, durationSec }
  const result = await (rate === undefined ? drive(load) : pace({ ...load, rate }))
  const cpu = watch.stop()
  result.foreignCpuPct = cpu.foreignPct
  // CPU per request: robust to a busy machine, unlike requests/s.
  result.serverCpuMsPerRequest = cpu.serverCpuMs / Math.max(1, result.requests)
  result.dbCpuMsPerRequest = cpu.dbCpuMs / Math.max(1, result.requests)
  result.contaminated = result.foreignCpuPct > config.foreignLimitPct
  await pause(smoke ? 100 : 500)
  return result
}

/** One measured run, at full speed or at `rate` requests a second; repeated once after a quiet spell if other processes took the machine meanwhile. */
const measure = async (server, def, durationSec, rate) => {
  const first = await runOnce(server, def, durationSec, rate)
  if (!first.contaminated || state.retriesLeft <= 0) return first
  state.retriesLeft--
  log(`  other processes used ${first.foreignCpuPct.toFixed(0)}% of the machine during that run: waiting for quiet, then repeating it`)
  await waitForQuiet(15_000)
  const second = await runOnce(server, def, durationSec, rate)
  second.repeatedAfter = { rps: first.rps, p50: first.p50, p99: first.p99, errors: first.errors, foreignCpuPct: first.foreignCpuPct }
  // The first run's errors still count.
  second.errors += first.errors
  return second
}

const describe = (r) =>
  `${r.rps.toFixed(0)} req/s, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, errors ${r.errors}` +
  (r.errors ? ` (statuses ${JSON.stringify(r.statuses)}, socket errors ${r.socketErrors})` : "") +
  `; CPU/request: server ${r.serverCpuMsPerRequest.toFixed(2)} ms, database ${r.dbCpuMsPerRequest.toFixed(2)} ms` +
  `; others used ${r.foreignCpuPct.toFixed(0)}% of the machine${r.contaminated ? " (CONTAMINATED)" : ""}`

/** The fastest run, preferring runs that other processes left alone. */
const best = (runs) => {
  const clean = runs.filter((r) => !r.contaminated)
  return (clean.length ? clean : runs).reduce((a, b) => (b.rps > a.rps ? b : a))
}
const sumErrors = (runs) => runs.reduce((sum, r) => sum + r.errors, 0)

const warmUp = async (server, defs, ids) => {
  for (const id of ids) await drive({ baseUrl: server.url, scenario: defs[id], connections: config.connections, durationSec: config.warmupSec })
}

/** Polls VmRSS during the run (the peak is also read from VmHWM at the end). */
const watchMemory = (server) => {
  let peak = 0
  const timer = setInterval(() => {
    const { rssMb } = server.memory()
    if (rssMb > peak) peak = rssMb
  }, 100)
  return () => {
    clearInterval(timer)
    const { hwmMb, rssMb } = server.memory()
    return { peakMb: Math.max(peak, hwmMb || 0), vmHwmMb: hwmMb, polledPeakRssMb: peak, endRssMb: rssMb }
  }
}

/**
 * Each peer's figures in a scenario: its best run (as ours and the baseline's), its run at the same paced load,
 * and each as a ratio to the raw baseline's (throughput, p99 at the same load, server CPU per request).
 */
const peerRows = (measuredPeers, base, baseAtRate, rate) => {
  const b = best(base)
  return Object.fromEntries(measuredPeers.map((peer) => {
    const p = best(peer.runs)
    const r = peer.atRate
    return [peer.id, {
      name: peer.name,
      rps: p.rps,
      p50: p.p50,
      p99: p.p99,
      errors: sumErrors(peer.runs),
      foreignCpuPct: p.foreignCpuPct,
      serverCpuMsPerRequest: p.serverCpuMsPerRequest,
      dbCpuMsPerRequest: p.dbCpuMsPerRequest,
      sameLoad: { rate, p50: r.p50, p99: r.p99, errors: r.errors, serverCpuMsPerRequest: r.serverCpuMsPerRequest, contaminated: r.contaminated },
      vsBaseline: {
        rps: p.rps / b.rps,
        p99AtSameLoad: r.p99 / baseAtRate.p99,
        serverCpuPerRequest: p.serverCpuMsPerRequest / b.serverCpuMsPerRequest
      },
      runs: peer.runs
    }]
  }))
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]

// ---------------------------------------------------------------- phases

// The server may call the bench's own webhook receiver on this machine; social account credentials need a key.
const serverEnv = (port, extra) => ({
  PORT: String(port),
  NODE_ENV: "production",
  LOG_LEVEL: "Warn",
  OUTBOUND_ALLOW_PRIVATE: "true",
  CREDENTIALS_KEY: benchCredentialsKey,
  // One token drives thousands of requests a second: the load test measures the server, not its rate limit.
  RATE_LIMIT_REQUESTS: "100000000",
  ...extra
})
const benchCredentialsKey = randomBytes(32).toString("base64")

/**
 * For S7: a webhook receiver in this process that answers 204 at once, a webhook account of the benchmark user's
 * team connected to it through the API, and enough drafts that every request publishes a new one.
 */
const preparePublishing = async (server, token, teamId, databaseUrl, drafts) => {
  const receiver = createHttpServer((request, response) => request.resume().on("end", () => response.writeHead(204).end()))
  await new Promise((listening) => receiver.listen(0, "127.0.0.1", listening))
  state.closers.push(() => new Promise((closed) => receiver.close(closed)))
  const res = await fetch(`${server.url}/v1/teams/${teamId}/social-accounts`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ provider: "webhook", url: `http://127.0.0.1:${receiver.address().port}/hook` })
  })
  if (res.status !== 201) throw new Error(`connecting the webhook: ${res.status} ${await res.text()}`)
  const account = await res.json()
  const rows = await queryPostgres(
    databaseUrl,
    `INSERT INTO posts (team_id, content) SELECT $1, 'Bench post ' || g FROM generate_series(1, $2::int) g RETURNING id`,
    [teamId, drafts]
  )
  return { teamId, accountId: account.id, postIds: rows.map((row) => row.id), next: 0 }
}

const postgresPhase = async (results) => {
  // The peers serve S1, S3 and S4 only; they are built first, so that a build that fails stops the run at once.
  const peersWanted = config.peers && peerScenarios.some(wanted)
  const peers = peersWanted ? peerDefs(root) : []
  if (peersWanted) {
    const buildMs = await buildPeers(root, join(state.tmp, "peers-build.log"))
    results.peers = {
      servers: Object.fromEntries(peers.map((peer) => [peer.id, peer.name])),
      versions: peerVersions(root),
      buildMs: Math.round(buildMs),
      parity: {},
      memory: {}
    }
    log(`built the peers (prisma generate, tsc) in ${(buildMs / 1000).toFixed(1)} s: ${peers.map((peer) => peer.name).join(", ")}`)
  }

  const database = await createDatabase()
  state.database = database.name
  results.machine.postgres = await serverVersion(database.url)
  log(`database ${database.name}`)

  // Migrations: the built server migrates at start.
  const migrating = await startOurServer({
    name: "server (migrating)",
    env: serverEnv(await freePort(), { DATABASE_URL: database.url }),
    logFile: join(state.tmp, "server-migrate.log")
  })
  results.startup.postgresFirstStartMs = migrating.startMs
  await migrating.stop()

  const user = makeBenchUser()
  let t = performance.now()
  await seedPostgres(database.url, seedSql(config.population, user))
  results.population.postgres = { ...config.population, seedMs: Math.round(performance.now() - t) }
  log(`seeded ${JSON.stringify(config.population)} in ${((performance.now() - t) / 1000).toFixed(1)} s`)

  // Fixtures: ids from the database, deep cursors by walking the list as a client would.
  const orgIds = (await queryPostgres(database.url, fixtureQueries.orgIds, [user.id])).map((r) => r.id)
  const teamIds = (await queryPostgres(database.url, fixtureQueries.teamIds, [user.id])).map((r) => r.id)
  const deepOrgs = Math.round(config.population.benchOrgs * 0.9)
  const deepTeams = Math.round(config.population.benchOrgs * config.population.teamsPerBenchOrg * 0.9)
  const fixtures = { orgIds, teamIds, deepOrgs, deepTeams }
  const addCursors = async (server) => {
    fixtures.deepOrgCursor = await cursorAt(server, "/v1/organizations", user.token, deepOrgs)
    fixtures.deepTeamCursor = await cursorAt(server, "/v1/teams", user.token, deepTeams)
  }

  // Parity, before measuring: both servers behind statement-recording proxies.
  if (!flags.profile) {
    const target = new URL(database.url)
    const pgTarget = { host: target.hostname, port: Number(target.port || 5432) }
    const [oursCapture, baseCapture] = [await startSqlCapture(pgTarget), await startSqlCapture(pgTarget)]
    const viaProxy = (capture) => {
      const u = new URL(database.url)
      u.hostname = "127.0.0.1"
      u.port = String(capture.port)
      return u.toString()
    }
    const oursParity = await startOurServer({
      name: "server (parity)",
      env: serverEnv(await freePort(), { DATABASE_URL: viaProxy(oursCapture) }),
      logFile: join(state.tmp, "server-parity.log")
    })
    const baseParity = await startServer({
      name: "baseline (parity)",
      script: baselineScript,
      env: { PORT: String(await freePort()), DATABASE_URL: viaProxy(baseCapture) },
      logFile: join(state.tmp, "baseline-parity.log")
    })
    await addCursors(oursParity)
    const failures = await parityCheck(
      { server: oursParity, capture: oursCapture },
      { server: baseParity, capture: baseCapture },
      scenarioDefs(user, fixtures),
      teamIds[teamIds.length - 1]
    )
    results.parity = { ok: failures.length === 0, failures }
    if (failures.length) for (const f of failures) log(`PARITY FAILURE ${f}`)
    else log("parity: for S1, S2, S3, S4 and S6 the baseline runs the same statements and answers the same bytes as the server")
    await oursParity.stop()
    // Each peer against the baseline, each behind a proxy of its own: S1, S3, S4, and S6's 401.
    for (const peer of peers) {
      const capture = await startSqlCapture(pgTarget)
      const peerParity = await startServer({
        name: `${peer.name} (parity)`,
        script: peer.script,
        env: { PORT: String(await freePort()), DATABASE_URL: viaProxy(capture) },
        logFile: join(state.tmp, `peer-${peer.id}-parity.log`)
      })
      const peerFailures = await parityCheck(
        { name: peer.name, server: peerParity, capture },
        { server: baseParity, capture: baseCapture },
        scenarioDefs(user, fixtures),
        teamIds[teamIds.length - 1],
        ["S1", "S3", "S6"]
      )
      results.peers.parity[peer.id] = { ok: peerFailures.length === 0, failures: peerFailures }
      if (peerFailures.length) for (const f of peerFailures) log(`PARITY FAILURE (${peer.name}) ${f}`)
      else log(`parity: for S1, S3, S4 and S6 ${peer.name} runs the same statements and answers the same bytes as the baseline`)
      await peerParity.stop()
      await capture.close()
    }
    await baseParity.stop()
    await Promise.all([oursCapture.close(), baseCapture.close()])
  }

  const profileDir = join(resultsDir, "profiles")
  if (flags.profile) mkdirSync(profileDir, { recursive: true })
  // The bundle as profiled, to attribute frames to source modules later even if it is rebuilt meanwhile.
  const bundleCopy = join(state.tmp, "dist")
  if (flags.profile) cpSync(dirname(serverScript), bundleCopy, { recursive: true })
  const server = await startOurServer({
    name: "server",
    env: serverEnv(await freePort(), { DATABASE_URL: database.url }),
    nodeArgs: flags.profile ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : [],
    logFile: join(state.tmp, "server.log")
  })
  results.startup.postgresStartMs = server.startMs
  const stopWatching = watchMemory(server)
  const baseline = flags.profile
    ? undefined
    : await startServer({
      name: "baseline",
      script: baselineScript,
      // The same runtime as the server's: heap limit and garbage collector count in CPU per request.
      nodeArgs: serverNodeArgs,
      env: { PORT: String(await freePort()), DATABASE_URL: database.url },
      logFile: join(state.tmp, "baseline.log")
    })
  // --before: another build of the server (the bundle before a change), measured in turn with this one.
  const before = flags.before && baseline
    ? await startServer({
      name: "server (before)",
      script: flags.before,
      node: flags["before-node"],
      nodeArgs: flags["before-node-args"]?.split(" ").filter(Boolean) ?? serverNodeArgs,
      env: serverEnv(await freePort(), { DATABASE_URL: database.url }),
      logFile: join(state.tmp, "server-before.log")
    })
    : undefined
  // The peers, with the baseline's Node.js flags.
  const peerServers = []
  if (baseline) {
    for (const peer of peers) {
      const peerServer = await startServer({
        name: peer.name,
        script: peer.script,
        nodeArgs: serverNodeArgs,
        env: { PORT: String(await freePort()), DATABASE_URL: database.url },
        logFile: join(state.tmp, `peer-${peer.id}.log`)
      })
      peerServers.push({ ...peer, server: peerServer, stopWatching: watchMemory(peerServer) })
    }
  }
  state.pids = [server.pid, baseline?.pid, before?.pid, ...peerServers.map((peer) => peer.server.pid)]
  log(`server pid ${server.pid} on ${server.url} (first answer after ${server.startMs.toFixed(0)} ms)` +
    (baseline ? `, baseline pid ${baseline.pid} on ${baseline.url}` : "") +
    (before ? `, before (${flags.before}) pid ${before.pid}` : "") +
    peerServers.map((peer) => `, ${peer.id} pid ${peer.server.pid} (first answer after ${peer.server.startMs.toFixed(0)} ms)`).join(""))
  if (fixtures.deepOrgCursor === undefined) await addCursors(server)
  const ids = postgresIds.filter(wanted)
  if (ids.includes("S7")) {
    fixtures.publishing = await preparePublishing(server, user.token, teamIds[0], database.url, config.publishDrafts)
  }
  const defs = scenarioDefs(user, fixtures)

  const quiet = await foreignCpuOver(1000, cpuContext())
  results.foreignCpuBeforePct = quiet
  if (quiet > config.foreignLimitPct) log(`WARNING: other processes use ${quiet.toFixed(0)}% of the machine: figures will be low`)
  const compared = ["S1", "S3", "S4"].filter((id) => ids.includes(id) && baseline)
  log(`warming up (${config.warmupSec} s per scenario)`)
  await warmUp(server, defs, ids.filter((id) => id !== "S5"))
  if (baseline) await warmUp(baseline, defs, compared)
  if (before) await warmUp(before, defs, compared)
  for (const peer of peerServers) await warmUp(peer.server, defs, compared.filter((id) => peerScenarios.includes(id)))

  const rows = []
  const row = (id, ours, base, extra = {}) => {
    const b = base ? best(base) : undefined
    const o = best(ours)
    rows.push({
      id,
      mode: "postgres",
      label: defs[id].label,
      read: Boolean(defs[id].read),
      rps: o.rps,
      p50: o.p50,
      p99: o.p99,
      errors: sumErrors(ours),
      foreignCpuPct: Math.max(o.foreignCpuPct, b?.foreignCpuPct ?? 0),
      serverCpuMsPerRequest: o.serverCpuMsPerRequest,
      dbCpuMsPerRequest: o.dbCpuMsPerRequest,
      runs: ours,
      ...(b
        ? {
          baseline: {
            rps: b.rps,
            p50: b.p50,
            p99: b.p99,
            errors: sumErrors(base),
            foreignCpuPct: b.foreignCpuPct,
            serverCpuMsPerRequest: b.serverCpuMsPerRequest,
            dbCpuMsPerRequest: b.dbCpuMsPerRequest,
            runs: base
          },
          ratio: o.rps / b.rps
        }
        : {}),
      ...extra
    })
  }
  // Alternating: ours, baseline, ours, baseline (with the peers: ours, baseline, fastify, nest, ...), so that drift affects all.
  for (const id of compared) {
    const ours = []
    const base = []
    const earlier = []
    const measuredPeers = peerServers.filter(() => peerScenarios.includes(id)).map((peer) => ({ ...peer, runs: [] }))
    for (let round = 0; round < config.rounds; round++) {
      ours.push(await measure(server, defs[id], config.durationSec))
      log(`${id} ours     ${describe(ours.at(-1))}`)
      if (before) {
        earlier.push(await measure(before, defs[id], config.durationSec))
        log(`${id} before   ${describe(earlier.at(-1))}`)
      }
      base.push(await measure(baseline, defs[id], config.durationSec))
      log(`${id} baseline ${describe(base.at(-1))}`)
      for (const peer of measuredPeers) {
        peer.runs.push(await measure(peer.server, defs[id], config.durationSec))
        log(`${id} ${peer.id.padEnd(8)} ${describe(peer.runs.at(-1))}`)
      }
    }
    // Latency at the same load: all at half the throughput of the slowest one (of ours and the baseline, and
    // of the peers when they run), which each sustains.
    const rate = Math.max(1, Math.round(Math.min(best(ours).rps, best(base).rps, ...measuredPeers.map((peer) => best(peer.runs).rps)) / 2))
    const oursAtRate = await measure(server, defs[id], config.durationSec, rate)
    log(`${id} ours     at ${rate} req/s: ${describe(oursAtRate)}`)
    const baseAtRate = await measure(baseline, defs[id], config.durationSec, rate)
    log(`${id} baseline at ${rate} req/s: ${describe(baseAtRate)}`)
    for (const peer of measuredPeers) {
      peer.atRate = await measure(peer.server, defs[id], config.durationSec, rate)
      log(`${id} ${peer.id.padEnd(8)} at ${rate} req/s: ${describe(peer.atRate)}`)
    }
    const sameLoad = {
      rate,
      p50: oursAtRate.p50,
      p99: oursAtRate.p99,
      baselineP50: baseAtRate.p50,
      baselineP99: baseAtRate.p99,
      errors: oursAtRate.errors + baseAtRate.errors,
      oursErrors: oursAtRate.errors,
      baselineErrors: baseAtRate.errors,
      contaminated: oursAtRate.contaminated || baseAtRate.contaminated
    }
    const b = before ? best(earlier) : undefined
    const beforeFigures = b
      ? { before: { rps: b.rps, p99: b.p99, serverCpuMsPerRequest: b.serverCpuMsPerRequest, errors: sumErrors(earlier) } }
      : {}
    const peerFigures = measuredPeers.length ? { peers: peerRows(measuredPeers, base, baseAtRate, rate) } : {}
    row(id, ours, base, { sameLoad, ...beforeFigures, ...peerFigures })
  }
  // S5 grows the benchmark user's organizations, so it runs after every list.
  for (const id of ids.filter((id) => !compared.includes(id))) {
    const runs = []
    for (let round = 0; round < 1; round++) {
      runs.push(await measure(server, defs[id], config.durationSec))
      log(`${id} ours     ${describe(runs.at(-1))}`)
    }
    row(id, runs)
  }
  rows.sort((a, b) => postgresIds.indexOf(a.id) - postgresIds.indexOf(b.id))

  results.memory.postgres = stopWatching()
  log(`server peak RSS ${results.memory.postgres.peakMb.toFixed(0)} MB`)
  const ended = await server.stop()
  if (ended.code !== 0) log(`server ended with ${JSON.stringify(ended)}; log: ${join(state.tmp, "server.log")}\n${server.logTail()}`)
  if (baseline) await baseline.stop()
  if (before) await before.stop()
  for (const peer of peerServers) {
    results.peers.memory[peer.id] = peer.stopWatching()
    await peer.server.stop()
  }

  if (flags.profile) {
    const files = readdirSync(profileDir).filter((f) => f.endsWith(".cpuprofile"))
      .map((f) => join(profileDir, f)).sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)
    if (files.length) {
      cpSync(bundleCopy, `${files[0]}.dist`, { recursive: true })
      results.profile = { file: files[0], ...summarise(files[0], 25) }
      console.log(`\nCPU profile ${files[0]}\n${formatSummary(results.profile)}\n`)
    } else log("no .cpuprofile was written (did the server exit normally?)")
  }

  await dropDatabase(database.name)
  log(`dropped database ${database.name}`)
  state.database = undefined
  return rows
}

const embeddedPhase = async (results) => {
  const dataDir = join(state.tmp, "embedded-data")
  const baselineDir = join(state.tmp, "embedded-baseline-data")
  const logFile = join(state.tmp, "server-embedded.log")
  const env = async () => serverEnv(await freePort(), { DATA_DIR: dataDir })

  // `pnpm start` as a user types it: a first start, then warm ones (bench/lib/start.mjs).
  const pnpmStart = await measurePnpmStart(root, config.warmStarts)
  results.startup.pnpmStartFirstMs = pnpmStart.firstMs
  results.startup.pnpmStartWarmRunsMs = pnpmStart.warmMs
  results.startup.pnpmStartWarmMs = median(pnpmStart.warmMs)
  log(`pnpm start: first ${pnpmStart.firstMs.toFixed(0)} ms, warm ${pnpmStart.warmMs.map((ms) => ms.toFixed(0)).join(", ")} ms`)

  // Cold: an empty folder, so the first start creates the database and migrates.
  let server = await startOurServer({ name: "server (embedded, cold)", env: await env(), logFile })
  results.startup.embeddedColdMs = server.startMs
  results.memory.embeddedColdStartPeakMb = server.memory().hwmMb
  await server.stop()
  log(`embedded cold start: first answer after ${server.startMs.toFixed(0)} ms, peak RSS ${results.memory.embeddedColdStartPeakMb.toFixed(0)} MB`)

  const user = makeBenchUser()
  let t = performance.now()
  const seed = seedSql(config.embeddedPopulation, user)
  const fixtures = await seedPGlite(dataDir, seed, async (db) => ({
    orgIds: (await db.query(fixtureQueries.orgIds, [user.id])).rows.map((r) => r.id),
    teamIds: (await db.query(fixtureQueries.teamIds, [user.id])).rows.map((r) => r.id)
  }))
  results.population.embedded = { ...config.embeddedPopulation, seedMs: Math.round(performance.now() - t) }
  log(`seeded the embedded database ${JSON.stringify(config.embeddedPopulation)} in ${((performance.now() - t) / 1000).toFixed(1)} s`)
  // The baseline gets a copy of its own: a data folder is opened by one process at a time.
  cpSync(dataDir, baselineDir, { recursive: true, filter: (path) => !path.endsWith("postline.lock") })

  // Warm: the same folder again; the last start is the one benchmarked.
  const warm = []
  for (let i = 0; i < config.warmStarts; i++) {
    server = await startOurServer({ name: "server (embedded)", env: await env(), logFile })
    state.pids = [server.pid]
    warm.push(server.startMs)
    if (i < config.warmStarts - 1) await server.stop()
  }
  results.startup.embeddedWarmRunsMs = warm
  results.startup.embeddedWarmMs = median(warm)
  log(`embedded warm starts: ${warm.map((ms) => ms.toFixed(0)).join(", ")} ms`)

  // The embedded baseline: node:http and PGlite queried directly, with the same SQL (baseline/pglite.mjs).
  const baseline = await startServer({
    name: "baseline (embedded)",
    script: baselineScript,
    env: { PORT: String(await freePort()), PGLITE_DATA_DIR: baselineDir },
    logFile: join(state.tmp, "baseline-embedded.log")
  })
  state.pids = [server.pid, baseline.pid]
  results.startup.embeddedBaselineWarmMs = baseline.startMs
  log(`embedded baseline pid ${baseline.pid} on ${baseline.url} (first answer after ${baseline.startMs.toFixed(0)} ms)`)

  const defs = scenarioDefs(user, { ...fixtures, deepOrgs: 0, deepTeams: 0, deepOrgCursor: "", deepTeamCursor: "" })
  const stopWatching = watchMemory(server)
  const stopWatchingBaseline = watchMemory(baseline)
  const ids = ["S1", "S4"].filter(wanted)
  await warmUp(server, defs, ids)
  await warmUp(baseline, defs, ids)
  const rows = []
  for (const id of ids) {
    // Alternating, as in the PostgreSQL phase: ours, baseline, ours, baseline.
    const ours = []
    const base = []
    for (let round = 0; round < config.rounds; round++) {
      ours.push(await measure(server, defs[id], config.durationSec))
      log(`${id} embedded ours     ${describe(ours.at(-1))}`)
      base.push(await measure(baseline, defs[id], config.durationSec))
      log(`${id} embedded baseline ${describe(base.at(-1))}`)
    }
    const o = best(ours)
    const b = best(base)
    rows.push({
      id: `${id}-embedded`,
      mode: "embedded",
      label: `${defs[id].label} [embedded]`,
      read: Boolean(defs[id].read),
      rps: o.rps,
      p50: o.p50,
      p99: o.p99,
      errors: sumErrors(ours),
      foreignCpuPct: Math.max(o.foreignCpuPct, b.foreignCpuPct),
      serverCpuMsPerRequest: o.serverCpuMsPerRequest,
      runs: ours,
      baseline: { rps: b.rps, p50: b.p50, p99: b.p99, errors: sumErrors(base), serverCpuMsPerRequest: b.serverCpuMsPerRequest, runs: base },
      ratio: o.rps / b.rps
    })
  }
  results.memory.embedded = stopWatching()
  // The baseline holds PGlite, node:http and nothing else, after the same queries: the reference for
  // "a process that holds PGlite alone".
  results.memory.embeddedBaseline = stopWatchingBaseline()
  log(`embedded server peak RSS ${results.memory.embedded.peakMb.toFixed(0)} MB, embedded baseline ${results.memory.embeddedBaseline.peakMb.toFixed(0)} MB`)
  await server.stop()
  await baseline.stop()
  return rows
}

// ---------------------------------------------------------------- S8: posts due at one instant

/**
 * An S8 process: ours, or `script`, with `pnpm start`'s Node.js flags and the heap sampler preloaded
 * (lib/heap-sampler.mjs, which reads V8's heap from inside).
 */
const startSampled = async ({ name, env, script = serverScript }) => {
  const file = join(state.tmp, name.replace(/\W+/g, "-"))
  const memoryFile = `${file}.memory.jsonl`
  const server = await startOurServer({ name, script, nodeArgs: ["--import", heapSampler], env: { ...env, BENCH_MEMORY_FILE: memoryFile }, logFile: `${file}.log` })
  return { server, memoryFile }
}

/**
 * From the burst's first schedule on, the peak RSS of the burst alone: the embedded server's start peaks far
 * higher (V8 compiles PGlite's WebAssembly; README, Performance) and is kept apart as `startPeakRssMb`.
 */
const watchBurst = (sampled) => {
  const startPeakRssMb = sampled.server.memory().hwmMb
  resetPeakMemory(sampled.server.pid)
  return { ...sampled, startPeakRssMb, stopWatching: watchMemory(sampled.server) }
}

/** Stops an S8 process; `died`: how it ended, if it ended before this. V8's heap peak is over its whole life. */
const stopSampled = async ({ server, memoryFile, startPeakRssMb, stopWatching }) => {
  const died = server.exited()
  if (died) log(`S8: ${server.name} ENDED BEFORE THE BENCHMARK STOPPED IT (${JSON.stringify(died)}); its log ends:\n${server.logTail()}`)
  const rss = stopWatching()
  await server.stop()
  const heap = peakMemory(memoryFile)
  return { name: server.name, peakRssMb: rss.peakMb, startPeakRssMb, peakHeapUsedMb: heap.heapUsedMb, heapLimitMb: heap.heapLimitMb, died }
}

/**
 * The deliveries of a run, once each scheduled post's webhook-id came, the deadline passed or every process
 * ended; then the processes' peaks. 2 s more for late duplicates: a send repeated by another process comes
 * after the first. `errors`: posts not published (a failed schedule's among them), deliveries beyond one per
 * post, schedules made after the due time, processes that died.
 */
const burstRun = async ({ receiver, processes, n, dueAt, scheduling }) => {
  const deadline = dueAt + 60_000 + n * 20
  const due = n - scheduling.failed
  while (receiver.distinct() < due && Date.now() < deadline && processes.some(({ server }) => !server.exited())) await pause(100)
  await pause(2_000)
  const figures = summariseBurst(receiver.take(), dueAt)
  const stopped = []
  for (const p of processes) stopped.push(await stopSampled(p))
  const errors = (n - figures.posts) + (figures.deliveries - figures.posts) + scheduling.late + stopped.filter((p) => p.died).length
  return { n, ...scheduling, ...figures, processes: stopped, errors }
}

const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`

const describeBurst = (b) =>
  `${b.webhookIds}/${b.n} webhook-ids (${b.posts} posts), ${b.deliveries} deliveries, ${b.duplicates} duplicates; ` +
  `lateness p50 ${seconds(b.latenessMs.p50)}, p99 ${seconds(b.latenessMs.p99)}, max ${seconds(b.latenessMs.max)}; ` +
  `${b.sendsPerSec.toFixed(0)} sends/s; scheduled at ${b.schedulesPerSec.toFixed(0)}/s, the last ${b.aheadSec.toFixed(1)} s before the due time` +
  (b.failed ? `, ${b.failed} schedules FAILED` : "") + (b.late ? `, ${b.late} AFTER THE DUE TIME` : "") +
  b.processes.map((p) =>
    `\n    ${p.name}: peak RSS ${p.peakRssMb.toFixed(0)} MB (${p.startPeakRssMb.toFixed(0)} MB before the burst), peak heap used ${p.peakHeapUsedMb.toFixed(0)} MB ` +
    `(heap limit ${p.heapLimitMb.toFixed(0)} MB)${p.died ? `, DIED (${JSON.stringify(p.died)})` : ""}`
  ).join("")

/** The seed of an S8 run: the benchmark user with one team, and `n` drafts of that team besides the probe's. */
const burstSeed = (user, n) => `${seedSql(populations.scheduler, user)}
INSERT INTO posts (team_id, content)
  SELECT t.id, CASE WHEN g <= ${config.burst.probePosts} THEN 'Probe ' ELSE 'Scheduled ' END || g
  FROM teams t JOIN memberships m ON m.organization_id = t.organization_id, generate_series(1, ${config.burst.probePosts + n}) g
  WHERE m.user_id = '${user.id}';
`

/** The team, its drafts and the probe's, through `query(text, values)` answering rows. */
const burstFixtures = async (query, user) => {
  const [team] = await query(fixtureQueries.teamIds, [user.id])
  const posts = await query("SELECT id, content LIKE 'Probe %' AS probe FROM posts WHERE team_id = $1", [team.id])
  return {
    teamId: team.id,
    probeIds: posts.filter((post) => post.probe).map((post) => post.id),
    postIds: posts.filter((post) => !post.probe).map((post) => post.id)
  }
}

/**
 * Schedules every post for `dueAt` through the API, on the processes in turn, `config.burst.concurrency`
 * requests at a time. `late`: schedules answered after the due time (whose lateness then means nothing).
 */
const scheduleAll = async (servers, call, teamId, postIds, accountId, dueAt) => {
  const scheduledAt = new Date(dueAt).toISOString()
  const startedAt = Date.now()
  const counts = { failed: 0, late: 0 }
  let next = 0
  await Promise.all(Array.from({ length: config.burst.concurrency }, async () => {
    for (let i = next++; i < postIds.length; i = next++) {
      await call(servers[i % servers.length], `/v1/teams/${teamId}/posts/${postIds[i]}/schedule`, { socialAccountIds: [accountId], scheduledAt })
        .then(
          () => {
            if (Date.now() > dueAt) counts.late++
          },
          (error) => {
            if (counts.failed++ === 0) log(`S8: scheduling FAILED: ${error.message}`)
          }
        )
    }
  }))
  const endedAt = Date.now()
  return { ...counts, aheadSec: (dueAt - endedAt) / 1000, schedulesPerSec: postIds.length / ((endedAt - startedAt) / 1000) }
}

/**
 * Connects the receiver as the team's webhook account, schedules every post for one instant, and measures. The
 * instant: after 1.5 times as long as the probe's rate needs for every schedule, and 5 s; the probe's drafts are
 * scheduled a day ahead, never due during the run.
 */
const burstOfOurs = async ({ processes, user, fixtures, receiver }) => {
  const call = async (server, path, body) => {
    const res = await fetch(server.url + path, {
      method: "POST",
      headers: { authorization: `Bearer ${user.token}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`)
    return res.json()
  }
  const servers = processes.map(({ server }) => server)
  const { teamId, probeIds, postIds } = fixtures
  const account = await call(servers[0], `/v1/teams/${teamId}/social-accounts`, { provider: "webhook", url: receiver.url })
  const watched = processes.map(watchBurst)
  const probe = await scheduleAll(servers, call, teamId, probeIds, account.id, Date.now() + 86_400_000)
  if (probe.failed) throw new Error(`S8: ${probe.failed} of the probe's schedules failed (the first is logged above)`)
  const dueAt = Date.now() + 5_000 + Math.round((1.5 * postIds.length / probe.schedulesPerSec) * 1000)
  const scheduling = await scheduleAll(servers, call, teamId, postIds, account.id, dueAt)
  if (scheduling.failed || scheduling.late) log(`S8 FAILED: ${scheduling.failed} schedules failed, ${scheduling.late} were made after the due time`)
  return burstRun({ receiver, processes: watched, n: postIds.length, dueAt, scheduling })
}

// Ours runs as the baseline does: the same sends under way per process, the same wait when nothing is due.
const burstEnv = { SCHEDULE_MIN_LEAD_SECONDS: "1", SCHEDULER_CONCURRENCY: String(config.burst.concurrency), SCHEDULER_POLL_MS: String(config.burst.pollMs) }

/** Ours, two server processes on one PostgreSQL database. */
const burstOnPostgres = async (n, receiver) => {
  const database = await createDatabase()
  state.database = database.name
  const env = async () => serverEnv(await freePort(), { DATABASE_URL: database.url, ...burstEnv })
  const migrating = await startOurServer({ name: "S8 (migrating)", env: await env(), logFile: join(state.tmp, "s8-migrating.log") })
  await migrating.stop()
  const user = makeBenchUser()
  await seedPostgres(database.url, burstSeed(user, n))
  const fixtures = await burstFixtures((text, values) => queryPostgres(database.url, text, values), user)
  const processes = []
  for (const name of ["A", "B"]) processes.push(await startSampled({ name: `S8-${n} PostgreSQL ${name}`, env: await env() }))
  const run = await burstOfOurs({ processes, user, fixtures, receiver })
  await dropDatabase(database.name)
  state.database = undefined
  return run
}

/** Ours, one process on a new embedded data folder. */
const burstEmbedded = async (n, receiver) => {
  const dataDir = join(state.tmp, `s8-${n}-embedded-data`)
  const env = async () => serverEnv(await freePort(), { DATA_DIR: dataDir, ...burstEnv })
  // The first start makes the folder; seeding needs it stopped (one process at a time).
  const creating = await startOurServer({ name: "S8 (new data folder)", env: await env(), logFile: join(state.tmp, "s8-creating.log") })
  await creating.stop()
  const user = makeBenchUser()
  const fixtures = await seedPGlite(dataDir, burstSeed(user, n), (db) => burstFixtures(async (text, values) => (await db.query(text, values)).rows, user))
  const processes = [await startSampled({ name: `S8-${n} embedded`, env: await env() })]
  return burstOfOurs({ processes, user, fixtures, receiver })
}

/** The baseline (baseline/scheduler.mjs), two processes on one PostgreSQL database; its schedule is one INSERT. */
const burstOfBaseline = async (n, receiver) => {
  const database = await createDatabase()
  state.database = database.name
  const query = (text, values) => queryPostgres(database.url, text, values)
  await createSends(query)
  const env = {
    DATABASE_URL: database.url,
    WEBHOOK_URL: receiver.url,
    WEBHOOK_SECRET: `whsec_${randomBytes(32).toString("base64")}`,
    SEND_CONCURRENCY: String(config.burst.concurrency),
    POLL_MS: String(config.burst.pollMs)
  }
  const processes = []
  for (const name of ["A", "B"]) {
    processes.push(await startSampled({ name: `S8-${n} baseline ${name}`, script: baselineSchedulerScript, env: { ...env, PORT: String(await freePort()) } }))
  }
  const watched = processes.map(watchBurst)
  const dueAt = Date.now() + 2_000
  const startedAt = Date.now()
  await addSends(query, n, dueAt)
  const endedAt = Date.now()
  const scheduling = { failed: 0, late: endedAt > dueAt ? n : 0, aheadSec: (dueAt - endedAt) / 1000, schedulesPerSec: n / ((endedAt - startedAt) / 1000) }
  const run = await burstRun({ receiver, processes: watched, n, dueAt, scheduling })
  await dropDatabase(database.name)
  state.database = undefined
  return run
}

const burstRow = (ours, baseline, mode) => ({
  id: `S8-${ours.n}${mode === "embedded" ? "-embedded" : ""}`,
  mode,
  label: `S8 ${ours.n} posts x 1 webhook due at once, ${mode === "embedded" ? "1 process [embedded]" : "2 processes"}`,
  read: false,
  rps: ours.sendsPerSec,
  p50: ours.latenessMs.p50,
  p99: ours.latenessMs.p99,
  errors: ours.errors,
  foreignCpuPct: NaN,
  serverCpuMsPerRequest: NaN,
  burst: ours,
  ...(baseline
    ? {
      baseline: { rps: baseline.sendsPerSec, p50: baseline.latenessMs.p50, p99: baseline.latenessMs.p99, errors: baseline.errors, burst: baseline },
      ratio: ours.sendsPerSec / baseline.sendsPerSec
    }
    : {}),
  runs: []
})

/**
 * S8 (bench/README.md): for each N of `config.burst.sizes`, N posts to one webhook account, all due at one
 * instant, on two server processes on PostgreSQL, then on the baseline's two, then on one embedded process;
 * each run on a database or data folder of its own. In the table, req/s is sends per second and p50/p99 lateness.
 */
const schedulerPhase = async () => {
  const receiver = await startReceiver()
  state.closers.push(receiver.close)
  const rows = []
  const logRun = (id, who, run) => log(`${id} ${who} ${describeBurst(run)}`)
  for (const n of config.burst.sizes) {
    if (!flags["embedded-only"]) {
      const ours = await burstOnPostgres(n, receiver)
      logRun(`S8-${n}`, "ours    ", ours)
      const baseline = await burstOfBaseline(n, receiver)
      logRun(`S8-${n}`, "baseline", baseline)
      rows.push(burstRow(ours, baseline, "postgres"))
    }
    if (config.embedded) {
      const ours = await burstEmbedded(n, receiver)
      logRun(`S8-${n}-embedded`, "ours", ours)
      rows.push(burstRow(ours, undefined, "embedded"))
    }
  }
  return rows
}

// ---------------------------------------------------------------- S9: uploads

/** Removes what a folder holds, not the folder (the upload baseline makes its folder once, at start). */
const emptyFolder = (dir) => {
  for (const entry of readdirSync(dir)) rmSync(join(dir, entry), { recursive: true, force: true })
}

/**
 * S9 (bench/README.md): uploads of a PNG of noise, each with bytes of its own (lib/upload.mjs), from
 * `config.upload.connections` connections, on ours (PostgreSQL, folder storage) and on the baseline
 * (baseline/upload.mjs: node:http streaming the part to a file in a folder, hashing it), alternately; the best
 * round of each. Each server's peak RSS over its warm-up and rounds. The storage folders are emptied after each
 * run (a full run stores gigabytes); ours keeps its database rows.
 */
const uploadPhase = async () => {
  const { connections, imageBytes } = config.upload
  const image = await makeNoisePng(imageBytes)
  log(`S9: a ${(image.size / MiB).toFixed(1)} MB PNG of noise, ${image.width}x${image.height}, ${connections} connections`)
  const database = await createDatabase()
  state.database = database.name
  // Both spool into a temporary folder of the run's own, and store into a folder of their own.
  const spoolDir = join(state.tmp, "s9-spool")
  const media = { ours: join(state.tmp, "s9-media"), baseline: join(state.tmp, "s9-baseline-media") }
  for (const dir of [spoolDir, ...Object.values(media)]) mkdirSync(dir, { recursive: true })
  const env = async () =>
    serverEnv(await freePort(), { DATABASE_URL: database.url, MEDIA_DIR: media.ours, TMPDIR: spoolDir, MEDIA_QUOTA_BYTES: String(2 ** 50) })
  const migrating = await startOurServer({ name: "S9 (migrating)", env: await env(), logFile: join(state.tmp, "s9-migrating.log") })
  await migrating.stop()
  const user = makeBenchUser()
  await seedPostgres(database.url, seedSql(populations.scheduler, user))
  const [team] = await queryPostgres(database.url, fixtureQueries.teamIds, [user.id])
  const path = `/v1/teams/${team.id}/assets`

  const server = await startOurServer({ name: "S9 server", env: await env(), logFile: join(state.tmp, "s9-server.log") })
  const baseline = await startServer({
    name: "S9 baseline",
    script: baselineUploadScript,
    nodeArgs: serverNodeArgs,
    env: { PORT: String(await freePort()), MEDIA_DIR: media.baseline, TMPDIR: spoolDir },
    logFile: join(state.tmp, "s9-baseline.log")
  })
  state.pids = [server.pid, baseline.pid]
  log(`S9 server pid ${server.pid} on ${server.url}, baseline pid ${baseline.pid} on ${baseline.url}`)
  const targets = { ours: server, baseline }

  // A distinct text in every upload of the run, warm-up and checks included.
  const counter = { runId: randomBytes(6).toString("hex"), next: 0 }
  const load = (target) => ({ baseUrl: target.url, path, token: user.token, image, connections, counter })
  // One upload through each first: the hash of the bytes sent (and, from the baseline, their size) in the answer.
  const check = [
    ...(await checkUpload({ ...load(server), sameSize: false })).map((problem) => `ours: ${problem}`),
    ...(await checkUpload({ ...load(baseline), sameSize: true })).map((problem) => `baseline: ${problem}`)
  ]
  for (const problem of check) log(`S9 CHECK FAILED ${problem}`)

  const idleRssMb = { ours: server.memory().rssMb, baseline: baseline.memory().rssMb }
  const watching = {}
  for (const [who, target] of Object.entries(targets)) {
    resetPeakMemory(target.pid)
    watching[who] = watchMemory(target)
  }
  log(`S9 warming up (${config.warmupSec} s each)`)
  for (const [who, target] of Object.entries(targets)) {
    await driveUploads({ ...load(target), durationSec: config.warmupSec })
    emptyFolder(media[who])
  }
  const uploadsOnce = async (who) => {
    const target = targets[who]
    const watch = watchForeignCpu({ ...cpuContext(), serverPid: target.pid })
    const result = await driveUploads({ ...load(target), durationSec: config.durationSec })
    const cpu = watch.stop()
    result.foreignCpuPct = cpu.foreignPct
    result.serverCpuMsPerRequest = cpu.serverCpuMs / Math.max(1, result.requests)
    result.dbCpuMsPerRequest = cpu.dbCpuMs / Math.max(1, result.requests)
    result.contaminated = result.foreignCpuPct > config.foreignLimitPct
    emptyFolder(media[who])
    log(`S9 ${who.padEnd(8)} ${result.rps.toFixed(2)} uploads/s, ${result.mbPerSec.toFixed(1)} MB/s; ${describe(result)}`)
    await pause(smoke ? 100 : 500)
    return result
  }
  // As `measure`: a run that other processes disturbed is repeated once after a quiet spell, while retries last.
  const measureUploads = async (who) => {
    const first = await uploadsOnce(who)
    if (!first.contaminated || state.retriesLeft <= 0) return first
    state.retriesLeft--
    log(`  other processes used ${first.foreignCpuPct.toFixed(0)}% of the machine during that run: waiting for quiet, then repeating it`)
    await waitForQuiet(15_000)
    const second = await uploadsOnce(who)
    second.repeatedAfter = { rps: first.rps, mbPerSec: first.mbPerSec, p50: first.p50, p99: first.p99, errors: first.errors, foreignCpuPct: first.foreignCpuPct }
    second.errors += first.errors
    return second
  }
  const runs = { ours: [], baseline: [] }
  for (let round = 0; round < config.rounds; round++) {
    for (const who of ["ours", "baseline"]) runs[who].push(await measureUploads(who))
  }
  const memory = Object.fromEntries(Object.entries(watching).map(([who, stop]) => [who, { ...stop(), idleRssMb: idleRssMb[who] }]))
  log(`S9 peak RSS: ours ${memory.ours.peakMb.toFixed(0)} MB (${idleRssMb.ours.toFixed(0)} MB idle), ` +
    `baseline ${memory.baseline.peakMb.toFixed(0)} MB (${idleRssMb.baseline.toFixed(0)} MB idle)`)
  for (const [who, target] of Object.entries(targets)) {
    const ended = await target.stop()
    if (ended.code !== 0) log(`S9 ${who} ended with ${JSON.stringify(ended)}:\n${target.logTail()}`)
  }
  await dropDatabase(database.name)
  state.database = undefined

  const o = best(runs.ours)
  const b = best(runs.baseline)
  const figures = (r, m) => ({ uploadsPerSec: r.rps, mbPerSec: r.mbPerSec, p50: r.p50, p99: r.p99, ...m })
  return {
    id: "S9",
    mode: "postgres",
    label: `S9 POST …/assets, ${(image.size / MiB).toFixed(0)} MB PNG, ${connections} conn.`,
    read: false,
    rps: o.rps,
    p50: o.p50,
    p99: o.p99,
    errors: sumErrors(runs.ours) + check.filter((problem) => problem.startsWith("ours")).length,
    foreignCpuPct: Math.max(o.foreignCpuPct, b.foreignCpuPct),
    serverCpuMsPerRequest: o.serverCpuMsPerRequest,
    dbCpuMsPerRequest: o.dbCpuMsPerRequest,
    runs: runs.ours,
    baseline: {
      rps: b.rps,
      p50: b.p50,
      p99: b.p99,
      errors: sumErrors(runs.baseline) + check.filter((problem) => problem.startsWith("baseline")).length,
      foreignCpuPct: b.foreignCpuPct,
      serverCpuMsPerRequest: b.serverCpuMsPerRequest,
      dbCpuMsPerRequest: b.dbCpuMsPerRequest,
      runs: runs.baseline
    },
    ratio: o.rps / b.rps,
    upload: {
      imageBytes: image.size,
      width: image.width,
      height: image.height,
      connections,
      check,
      ours: figures(o, memory.ours),
      baseline: figures(b, memory.baseline)
    }
  }
}

// ---------------------------------------------------------------- S10: a start with future schedules

/**
 * What S10 starts on: a database (or data folder) with the benchmark user's team, a webhook account on
 * `receiver` connected through the API, `config.start.runs` drafts, and `future` schedules a day ahead and
 * beyond (plain SQL, as posts scheduled through the API leave them), analysed as a live database would be.
 * `withQuery(use)` runs `use(query)` on it while no server runs; `env()`, a server's environment on it.
 */
const startFixture = async ({ mode, future, receiver, copyOf }) => {
  const user = copyOf?.user ?? makeBenchUser()
  const extra = { SCHEDULER_POLL_MS: String(config.start.pollMs) }
  let fixture
  if (mode === "postgres") {
    const database = await createDatabase(copyOf?.database.name)
    state.startDatabases.add(database.name)
    fixture = {
      database,
      env: async () => serverEnv(await freePort(), { DATABASE_URL: database.url, ...extra }),
      withQuery: (use) => use((text, values) => queryPostgres(database.url, text, values)),
      seed: (script) => seedPostgres(database.url, script)
    }
  } else {
    const dataDir = join(state.tmp, `s10-${future}-data`)
    if (copyOf) cpSync(copyOf.dataDir, dataDir, { recursive: true, filter: (path) => !path.endsWith("postline.lock") })
    const withQuery = async (use) => {
      const PGlite = await loadPGlite()
      const db = await PGlite.create(dataDir)
      try {
        return await use(async (text, values) => (await db.query(text, values)).rows)
      } finally {
        await db.close()
      }
    }
    fixture = {
      dataDir,
      env: async () => serverEnv(await freePort(), { DATA_DIR: dataDir, ...extra }),
      withQuery,
      seed: (script) => seedPGlite(dataDir, script)
    }
  }
  // A copy of a prepared database or folder (without its lock) needs no start to migrate it, seed or account.
  let team = copyOf?.team
  if (copyOf === undefined) {
    // The first start migrates (and makes a new data folder); seeding needs it stopped.
    const migrating = await startOurServer({ name: `S10 ${mode} (migrating)`, env: await fixture.env(), logFile: join(state.tmp, "s10-migrating.log") })
    await migrating.stop()
    await fixture.seed(`${seedSql(populations.scheduler, user)}
INSERT INTO posts (team_id, content)
  SELECT t.id, 'Due at start ' || g
  FROM teams t JOIN memberships m ON m.organization_id = t.organization_id, generate_series(1, ${config.start.runs}) g
  WHERE m.user_id = '${user.id}';`)
    const [{ id: teamId }] = await fixture.withQuery((query) => query(fixtureQueries.teamIds, [user.id]))
    // The account's credentials are the server's to encrypt.
    const server = await startOurServer({ name: `S10 ${mode} (account)`, env: await fixture.env(), logFile: join(state.tmp, "s10-account.log") })
    const res = await fetch(`${server.url}/v1/teams/${teamId}/social-accounts`, {
      method: "POST",
      headers: { authorization: `Bearer ${user.token}`, "content-type": "application/json" },
      body: JSON.stringify({ provider: "webhook", url: receiver.url })
    })
    if (res.status !== 201) throw new Error(`S10: connecting the webhook: ${res.status} ${await res.text()}`)
    team = { id: teamId, accountId: (await res.json()).id }
    await server.stop()
  }
  if (future > 0) {
    await fixture.seed(`WITH made AS (
    INSERT INTO posts (team_id, content, status, scheduled_at, schedule_version, social_account_ids)
    SELECT '${team.id}', 'Later ' || g, 'scheduled', now() + interval '1 day' + g * interval '1 second', 1, ARRAY['${team.accountId}'::uuid]
    FROM generate_series(1, ${future}) g RETURNING id, scheduled_at)
  INSERT INTO post_targets (post_id, social_account_id, status, due_at)
  SELECT id, '${team.accountId}', 'pending', scheduled_at FROM made;`)
  }
  const drafts = await fixture.withQuery((query) =>
    query("SELECT id FROM posts WHERE team_id = $1 AND content LIKE 'Due at start %' ORDER BY content", [team.id]))
  return { ...fixture, mode, future, user, team, drafts: drafts.map((row) => row.id) }
}

/**
 * One start: the fixture's `run`th draft made due now (as a post that came due while no server ran), then a
 * server process spawned; from the spawn to that post's webhook at the receiver, and to its first answer.
 * Deliveries of any other post are counted: nothing else is due.
 */
const startToFirstSend = async (fixture, run, receiver) => {
  const postId = fixture.drafts[run]
  await fixture.withQuery(async (query) => {
    await query("UPDATE posts SET status = 'scheduled', scheduled_at = now(), schedule_version = 1 WHERE id = $1", [postId])
    await query("INSERT INTO post_targets (post_id, social_account_id, status, due_at) VALUES ($1, $2, 'pending', now())", [postId, fixture.team.accountId])
  })
  receiver.take()
  const name = `S10 ${fixture.mode}, ${fixture.future} future, start ${run + 1}`
  const spawnedAt = Date.now()
  const server = await startOurServer({ name, env: await fixture.env(), logFile: join(state.tmp, "s10-server.log") })
  const deliveries = []
  const deadline = spawnedAt + config.start.deadlineMs
  while (!deliveries.some((delivery) => delivery.postId === postId) && Date.now() < deadline && !server.exited()) {
    await pause(10)
    deliveries.push(...receiver.take())
  }
  // Anything sent by mistake right after the due post has a moment to arrive.
  await pause(500)
  deliveries.push(...receiver.take())
  const ended = await server.stop()
  const sent = deliveries.filter((delivery) => delivery.postId === postId)
  const others = deliveries.length - sent.length
  if (sent.length === 0) log(`S10 FAILED: ${name}: the due post was not sent within ${config.start.deadlineMs / 1000} s (${JSON.stringify(ended)}); log:\n${server.logTail()}`)
  if (others) log(`S10 FAILED: ${name}: ${others} deliveries of posts that were not due`)
  const repeated = Math.max(0, sent.length - 1)
  if (repeated) log(`S10 FAILED: ${name}: the due post was sent ${sent.length} times`)
  return {
    toFirstSendMs: sent.length ? Math.min(...sent.map((delivery) => delivery.at)) - spawnedAt : NaN,
    toFirstAnswerMs: server.startMs,
    deliveries: sent.length,
    errors: (sent.length ? 0 : 1) + others + repeated
  }
}

/**
 * S10 (bench/README.md): spawn to the first send of a post due at start, with `config.start.futureSchedules`
 * future schedules in the database and with none, started in turn (none, with, none, with, …); the quickest of
 * each, and their ratio. On PostgreSQL, then on the embedded database.
 */
const startPhase = async () => {
  const receiver = await startReceiver()
  state.closers.push(receiver.close)
  state.startDatabases = new Set()
  state.closers.push(() => Promise.all([...state.startDatabases].map((name) => dropDatabase(name).catch(() => {}))))
  const { futureSchedules, runs } = config.start
  const modes = [...(flags["embedded-only"] ? [] : ["postgres"]), ...(config.embedded ? ["embedded"] : [])]
  const rows = []
  for (const mode of modes) {
    const none = await startFixture({ mode, future: 0, receiver })
    let t = performance.now()
    const loaded = await startFixture({ mode, future: futureSchedules, receiver, copyOf: none })
    log(`S10 ${mode}: ${futureSchedules} future schedules made in ${((performance.now() - t) / 1000).toFixed(1)} s`)
    const starts = { none: [], loaded: [] }
    for (let run = 0; run < runs; run++) {
      for (const [kind, fixture] of [["none", none], ["loaded", loaded]]) {
        const start = await startToFirstSend(fixture, run, receiver)
        starts[kind].push(start)
        log(`S10 ${mode} ${kind === "none" ? "none    " : `${futureSchedules}`} start ${run + 1}: first send after ${start.toFirstSendMs.toFixed(0)} ms, first answer after ${start.toFirstAnswerMs.toFixed(0)} ms`)
      }
    }
    for (const fixture of [none, loaded]) {
      if (fixture.database) {
        await dropDatabase(fixture.database.name)
        state.startDatabases.delete(fixture.database.name)
      }
    }
    const quickest = (list) => Math.min(...list.map((start) => start.toFirstSendMs))
    const withSchedules = starts.loaded.map((start) => start.toFirstSendMs)
    rows.push({
      id: `S10${mode === "embedded" ? "-embedded" : ""}`,
      mode,
      label: `S10 start to first send, ${futureSchedules.toLocaleString("en")} future schedules vs none${mode === "embedded" ? " [embedded]" : ""}`,
      read: false,
      rps: NaN,
      p50: quickest(starts.loaded),
      p99: Math.max(...withSchedules),
      errors: [...starts.none, ...starts.loaded].reduce((sum, start) => sum + start.errors, 0),
      foreignCpuPct: NaN,
      serverCpuMsPerRequest: NaN,
      ratio: quickest(starts.loaded) / quickest(starts.none),
      start: { futureSchedules, runs, quickestMs: { none: quickest(starts.none), loaded: quickest(starts.loaded) }, starts },
      runs: []
    })
  }
  return rows
}

const describeStart = (r) => {
  const s = r.start
  const list = (starts) => starts.map((start) => `${start.toFirstSendMs.toFixed(0)} (${start.toFirstAnswerMs.toFixed(0)})`).join(", ")
  return `  ${r.id}: quickest ${s.quickestMs.loaded.toFixed(0)} ms with ${s.futureSchedules.toLocaleString("en")} future schedules, ` +
    `${s.quickestMs.none.toFixed(0)} ms with none: ${r.ratio.toFixed(2)}x\n` +
    `    each start, ms to the first send (to the first answer): with ${list(s.starts.loaded)}; none ${list(s.starts.none)}`
}

// ---------------------------------------------------------------- main

const main = async () => {
  if (!existsSync(serverScript)) throw new Error(`${serverScript} is missing: run \`pnpm bench\` (it builds first) or \`pnpm build\``)
  state.tmp = mkdtempSync(join(tmpdir(), "postline-bench-"))
  mkdirSync(resultsDir, { recursive: true })
  const results = {
    generatedAt: new Date().toISOString(),
    mode: config.mode,
    machine: {
      cpu: cpus()[0]?.model ?? "unknown",
      cores: cpus().length,
      memoryMb: Math.round(totalmem() / 2 ** 20),
      node: process.version,
      kernel: release()
    },
    config: {
      connections: config.connections,
      durationSec: config.durationSec,
      warmupSec: config.warmupSec,
      rounds: config.rounds,
      peers: config.peers,
      scheduledPosts: config.burst.sizes,
      futureSchedules: config.start.futureSchedules,
      upload: config.upload
    },
    population: {},
    startup: {},
    memory: {},
    parity: undefined,
    scenarios: [],
    targets: []
  }
  log(`${config.mode} run: ${config.connections} connections, ${config.durationSec} s per scenario, ${config.rounds} round(s)`)
  const rows = flags["embedded-only"] || !postgresIds.some(wanted) ? [] : await postgresPhase(results)
  if (wanted("S8") && !flags.profile) rows.push(...(await schedulerPhase()))
  if (wanted("S9") && !flags.profile && !flags["embedded-only"]) rows.push(await uploadPhase())
  if (wanted("S10") && !flags.profile) rows.push(...(await startPhase()))
  if (wanted("S11") && !flags.profile && (!smoke || only?.has("S11"))) {
    results.imageMemory = await measureImageMemory({ script: serverScript, settleSec: smoke ? 5 : 60, log })
  }
  if (wanted("S12") && !flags.profile) results.textScaling = measureTextScaling()
  if (config.embedded && ["S1", "S4"].some(wanted)) rows.push(...(await embeddedPhase(results)))
  results.scenarios = rows
  results.targets = evaluateTargets({ rows, memory: results.memory, startup: results.startup })
  results.elapsedSec = Math.round((performance.now() - t0) / 100) / 10

  const m = results.machine
  console.log(`\nPostline benchmark (${config.mode}): ${m.cpu}, ${m.cores} cores, Node ${m.node}${m.postgres ? `, PostgreSQL ${m.postgres}` : ""}; ` +
    `${config.connections} connections, ${config.durationSec} s per scenario, best of ${config.rounds}\n`)
  console.log(table(rows))
  console.log(`(best run of each; "CPU ms/req": CPU time of the server process per request, ours/baseline, and of ` +
    `PostgreSQL's backends; "others' CPU": share of the machine that processes other than the benchmark's used ` +
    `during the reported run; above ${config.foreignLimitPct}% the figures are low)`)
  const sameLoad = rows.filter((r) => r.sameLoad)
  if (sameLoad.length) {
    console.log(`\nat the same load (half the slowest one's throughput${rows.some((r) => r.peers) ? ", of ours, the baseline and the peers" : ""}), p50 / p99 ms, ours vs baseline:`)
    for (const r of sameLoad) {
      const l = r.sameLoad
      console.log(`  ${r.id} at ${l.rate} req/s: ${l.p50.toFixed(2)} / ${l.p99.toFixed(2)} vs ${l.baselineP50.toFixed(2)} / ${l.baselineP99.toFixed(2)}` +
        (l.contaminated ? " (others used the machine meanwhile)" : ""))
    }
  }
  if (rows.some((r) => r.peers)) {
    console.log(`\npeers (bench/peers), each as a ratio to the raw baseline (node:http + pg); best run of each, p99 at the same paced load as above:`)
    console.log(peersTable(rows))
  }
  const changed = rows.filter((r) => r.before)
  if (changed.length) {
    console.log(`\nbefore (${flags.before}) -> after (this build), interleaved: req/s, p99 ms, server CPU ms/req`)
    for (const r of changed) {
      const b = r.before
      console.log(`  ${r.id}: ${b.rps.toFixed(0)} -> ${r.rps.toFixed(0)} req/s (${(r.rps / b.rps).toFixed(2)}x), ` +
        `p99 ${b.p99.toFixed(2)} -> ${r.p99.toFixed(2)}, CPU ${b.serverCpuMsPerRequest.toFixed(3)} -> ${r.serverCpuMsPerRequest.toFixed(3)} ` +
        `(${(r.serverCpuMsPerRequest / b.serverCpuMsPerRequest).toFixed(2)}x)`)
    }
  }
  const bursts = rows.filter((r) => r.burst)
  if (bursts.length) {
    console.log(`\nS8, posts due at one instant: lateness = arrival at the receiver - due time; ` +
      `sends/s = distinct webhook-ids / (last arrival - first arrival)`)
    for (const r of bursts) {
      console.log(`  ${r.id} ours     ${describeBurst(r.burst)}`)
      if (r.baseline) console.log(`  ${r.id} baseline ${describeBurst(r.baseline.burst)}\n    sends/s ours/baseline: ${r.ratio.toFixed(2)}`)
    }
  }
  const uploads = rows.find((r) => r.upload)
  if (uploads) console.log(`\n${describeUploads(uploads)}`)
  const startRows = rows.filter((r) => r.start)
  if (startRows.length) {
    console.log(`\nS10, a start with future schedules: spawn to the due post's webhook at the receiver, quickest of each kind, started in turn:`)
    for (const r of startRows) console.log(describeStart(r))
  }
  if (results.imageMemory) {
    const m = results.imageMemory
    console.log(`\nS11, ${m.uploads} uploads of 49 megapixels per format, ${m.atOnce} at once` +
      `${m.limitMb === null ? " (no memory cgroup)" : ` in a ${m.limitMb} MB memory cgroup`}; settled = ${m.settleSec} s after the last answer:`)
    for (const r of m.results) console.log(`  ${r.format}: ${describeImageMemory(r)}`)
  }
  if (results.textScaling) {
    const t = results.textScaling
    console.log(`\nS12, reading a post's text: CPU time for ${(t.size * t.factor).toLocaleString("en")} code units over ` +
      `${t.size.toLocaleString("en")} (least of 5 runs each; linear is about ${t.factor}x, quadratic ${t.factor ** 2}x):`)
    for (const r of t.results) console.log(describeTextScaling(r))
  }
  const s = results.startup
  const mem = results.memory
  console.log("")
  const peaks = [
    mem.postgres && `${mem.postgres.peakMb.toFixed(0)} MB (PostgreSQL mode)`,
    mem.embedded && `${mem.embedded.peakMb.toFixed(0)} MB (embedded mode; embedded baseline ${mem.embeddedBaseline.peakMb.toFixed(0)} MB)`,
    mem.embeddedColdStartPeakMb !== undefined && `${mem.embeddedColdStartPeakMb.toFixed(0)} MB creating a new data folder`
  ].filter(Boolean)
  if (peaks.length) console.log(`peak RSS: ${peaks.join(", ")}`)
  const starts = [
    s.postgresStartMs !== undefined && `PostgreSQL ${s.postgresStartMs.toFixed(0)} ms (first start with migrations ${s.postgresFirstStartMs?.toFixed(0)} ms)`,
    s.pnpmStartWarmMs !== undefined && `\`pnpm start\` ${s.pnpmStartWarmMs.toFixed(0)} ms warm (median of ${s.pnpmStartWarmRunsMs.length}), ${s.pnpmStartFirstMs.toFixed(0)} ms first (new data folder and compile cache)`,
    s.embeddedWarmMs !== undefined && `embedded ${s.embeddedWarmMs.toFixed(0)} ms warm (median of ${s.embeddedWarmRunsMs.length}), ${s.embeddedColdMs.toFixed(0)} ms cold (new data folder); embedded baseline ${s.embeddedBaselineWarmMs.toFixed(0)} ms warm`
  ].filter(Boolean)
  if (starts.length) console.log(`start to first answer: ${starts.join("; ")}`)
  if (results.parity) {
    console.log(`parity with the baseline: ${results.parity.ok ? "same statements, same bytes" : `FAILED\n  ${results.parity.failures.join("\n  ")}`}`)
  }
  for (const [id, parity] of Object.entries(results.peers?.parity ?? {})) {
    console.log(`parity of ${results.peers.servers[id]} with the baseline (S1, S3, S4, S6): ${parity.ok ? "same statements, same bytes" : `FAILED\n  ${parity.failures.join("\n  ")}`}`)
  }
  if (results.peers) {
    const mem = Object.entries(results.peers.memory).map(([id, m]) => `${results.peers.servers[id]} ${m.peakMb.toFixed(0)} MB`)
    console.log(`peers: ${Object.entries(results.peers.versions).map(([name, version]) => `${name} ${version}`).join(", ")}; ` +
      `built in ${(results.peers.buildMs / 1000).toFixed(1)} s${mem.length ? `; peak RSS ${mem.join(", ")}` : ""}`)
  }
  console.log(`\ntargets:\n${formatTargets(results.targets)}`)

  const file = join(resultsDir, config.mode === "full" ? "latest.json" : `${config.mode}.json`)
  writeFileSync(file, JSON.stringify(results, null, 2) + "\n")
  console.log(`\nwrote ${file} (${results.elapsedSec} s)`)

  const errors = rows.reduce((sum, r) => sum + rowErrors(r), 0) + (results.imageMemory ? imageMemoryErrors(results.imageMemory) : 0)
  const peersParityOk = Object.values(results.peers?.parity ?? {}).every((parity) => parity.ok)
  return errors === 0 && (results.parity?.ok ?? true) && peersParityOk ? 0 : 1
}

main().then(
  async (code) => {
    await cleanup()
    if (code !== 0) log("FAILED: errors in some scenario, or the baseline's (or a peer's) statements or bytes differ (see above)")
    process.exit(code)
  },
  async (error) => {
    log(`FAILED: ${error.stack ?? error}`)
    await cleanup()
    process.exit(1)
  }
)
