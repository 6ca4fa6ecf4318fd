// The load generator: autocannon's programmatic API, with latencies taken
// from every response (autocannon's own histogram has 1 ms resolution).
import autocannon from "autocannon"
import { Agent, request } from "node:http"

/** The p-quantile (0-1) of ascending values, by the nearest rank. */
export const percentile = (sorted, p) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]

/** A run's figures from every response's latency and status; a status other than the expected one is an error. */
const summary = ({ latencies, statuses, scenario, seconds, socketErrors, timeouts }) => {
  const sorted = Float64Array.from(latencies).sort()
  let unexpected = 0
  for (const [status, count] of statuses) {
    const ok = scenario.expectStatus === undefined ? status >= 200 && status < 300 : status === scenario.expectStatus
    if (!ok) unexpected += count
  }
  return {
    requests: latencies.length,
    durationSec: seconds,
    rps: latencies.length / seconds,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    errors: unexpected + socketErrors,
    socketErrors,
    timeouts,
    statuses: Object.fromEntries(statuses)
  }
}

/**
 * Drives `baseUrl` with one scenario for `durationSec` over `connections`
 * connections. A scenario is `{ method, path, headers, body, setup?, expectStatus? }`;
 * `setup(n)` (optional) returns `{ path?, body? }` for the n-th request, for
 * requests that change (S3, S4, S5). Errors: socket errors and timeouts, plus
 * every response whose status is not the expected one (2xx unless
 * `expectStatus` says otherwise).
 */
export const drive = async ({ baseUrl, scenario, connections, durationSec }) => {
  let n = 0
  const request = { method: scenario.method, path: scenario.path, headers: scenario.headers }
  if (scenario.body !== undefined) request.body = scenario.body
  if (scenario.setup) {
    request.setupRequest = (req) => {
      const change = scenario.setup(n++)
      return { ...req, ...change }
    }
  }
  const latencies = []
  const statuses = new Map()
  const instance = autocannon({
    url: baseUrl,
    connections,
    duration: durationSec,
    // autocannon notices the end of the duration at its next sample (every second by default): a run
    // shorter than a second (a smoke run's 0.3 s warm-up) would last a whole one.
    sampleInt: Math.min(1000, Math.max(100, Math.round(durationSec * 1000))),
    timeout: 10,
    requests: [request]
  })
  instance.on("response", (_client, statusCode, _bytes, responseTime) => {
    latencies.push(responseTime)
    statuses.set(statusCode, (statuses.get(statusCode) ?? 0) + 1)
  })
  const result = await instance
  const seconds = result.duration > 0 ? result.duration : durationSec
  return summary({ latencies, statuses, scenario, seconds, socketErrors: result.errors, timeouts: result.timeouts })
}

/**
 * Sends `rate` requests a second at even intervals for `durationSec`, whether or not earlier ones were
 * answered (an open loop over up to `connections` keep-alive connections), so that two servers can be
 * compared at the same load. autocannon's own rate limit sends each second's requests in one burst.
 * A latency runs from the moment its request was due, so that waiting for a free connection counts.
 */
export const pace = async ({ baseUrl, scenario, connections, durationSec, rate }) => {
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const url = new URL(baseUrl)
  const latencies = []
  const statuses = new Map()
  let errors = 0
  const send = (n, dueAt) =>
    new Promise((resolve) => {
      const change = scenario.setup ? scenario.setup(n) : {}
      const body = change.body ?? scenario.body
      const req = request({
        agent,
        host: url.hostname,
        port: url.port,
        method: scenario.method,
        path: change.path ?? scenario.path,
        headers: body === undefined ? scenario.headers : { ...scenario.headers, "content-length": Buffer.byteLength(body) },
        timeout: 10_000
      }, (res) => {
        res.resume()
        res.on("end", () => {
          latencies.push(performance.now() - dueAt)
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
          resolve()
        })
      })
      req.on("timeout", () => req.destroy(new Error("timeout")))
      req.on("error", () => {
        errors++
        resolve()
      })
      req.end(body)
    })
  const total = Math.round(rate * durationSec)
  const start = performance.now()
  const pending = []
  for (let n = 0; n < total; n++) {
    const dueAt = start + (n * 1000) / rate
    const wait = dueAt - performance.now()
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait))
    pending.push(send(n, dueAt))
  }
  await Promise.all(pending)
  agent.destroy()
  return summary({ latencies, statuses, scenario, seconds: (performance.now() - start) / 1000, socketErrors: errors, timeouts: 0 })
}
