// How much of the machine something else used during a measurement. On a
// shared 2-core machine a test suite running next to the benchmark halves
// its figures; such runs are flagged (and repeated once when possible).
import { readdirSync, readFileSync } from "node:fs"

// A backend's title: "postgres: [cluster: ]user database host(port) state".
const clientBackend = /^postgres: (?:\S+: )?\S+ (\S+) \S+\(\d+\)/
const isPostgres = (cmdline) => cmdline.startsWith("postgres") || /^\S*\/bin\/postgres(?: |$)/.test(cmdline)

const jiffiesOf = (pid) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return Number(fields[11]) + Number(fields[12]) // utime + stime
  } catch {
    return 0
  }
}

const cmdlineOf = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim()
  } catch {
    return ""
  }
}

const machineJiffies = () => {
  const [, ...values] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/)
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  return values.slice(0, 8).reduce((sum, v) => sum + Number(v), 0)
}

/**
 * CPU time so far: of every foreign process (everything but this process,
 * `pids`, and PostgreSQL's own processes and its backends of `database`;
 * PostgreSQL backends of other databases are foreign), of `serverPid`, and
 * of the PostgreSQL backends of `database`.
 */
const sample = ({ pids, database, serverPid }) => {
  const foreign = new Map()
  const db = new Map()
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const pid = Number(entry)
    if (pid === process.pid || pids.has(pid)) continue
    const cmdline = cmdlineOf(pid)
    if (isPostgres(cmdline)) {
      const backend = clientBackend.exec(cmdline)
      if (!backend) continue
      if (database !== undefined && backend[1] === database) {
        db.set(pid, jiffiesOf(pid))
        continue
      }
    }
    const jiffies = jiffiesOf(pid)
    if (jiffies > 0) foreign.set(pid, jiffies)
  }
  return { total: machineJiffies(), foreign, db, server: serverPid ? jiffiesOf(serverPid) : 0 }
}

const msPerJiffy = 10 // CLK_TCK is 100 on Linux

const growth = (end, start) => {
  let sum = 0
  // Processes that ended meanwhile are missed: an underestimate.
  for (const [pid, jiffies] of end) sum += Math.max(0, jiffies - (start.get(pid) ?? 0))
  return sum
}

/**
 * Starts watching; `stop()` returns the share of the machine (0..100 %) that
 * foreign processes used meanwhile, and the CPU milliseconds that the server
 * process and the database's backends used.
 */
export const watchForeignCpu = ({ pids, database, serverPid }) => {
  const options = { pids: new Set(pids.filter(Boolean)), database, serverPid }
  const none = { foreignPct: NaN, serverCpuMs: NaN, dbCpuMs: NaN }
  let start
  try {
    start = sample(options)
  } catch {
    return { stop: () => none }
  }
  return {
    stop: () => {
      try {
        const end = sample(options)
        const total = end.total - start.total
        return {
          foreignPct: total > 0 ? Math.min(100, (100 * growth(end.foreign, start.foreign)) / total) : NaN,
          serverCpuMs: (end.server - start.server) * msPerJiffy,
          dbCpuMs: growth(end.db, start.db) * msPerJiffy
        }
      } catch {
        return none
      }
    }
  }
}

/** Foreign CPU share over `ms`. */
export const foreignCpuOver = async (ms, options) => {
  const watch = watchForeignCpu(options)
  await new Promise((resolve) => setTimeout(resolve, ms))
  return watch.stop().foreignPct
}

/** Waits (up to `maxMs`) until processes other than `options`' leave the machine below `limitPct`; returns their last share. */
export const waitForQuiet = async (maxMs, limitPct, options) => {
  const until = performance.now() + maxMs
  let foreign = await foreignCpuOver(1000, options)
  while (foreign > limitPct && performance.now() < until) foreign = await foreignCpuOver(1000, options)
  return foreign
}
