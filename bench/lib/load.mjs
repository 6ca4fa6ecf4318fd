// The load generator: autocannon's programmatic API, with latencies taken
// from every response (autocannon's own histogram has 1 ms resolution).
import autocannon from "autocannon"

const percentile = (sorted, p) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]

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
    timeout: 10,
    requests: [request]
  })
  instance.on("response", (_client, statusCode, _bytes, responseTime) => {
    latencies.push(responseTime)
    statuses.set(statusCode, (statuses.get(statusCode) ?? 0) + 1)
  })
  const result = await instance
  const sorted = Float64Array.from(latencies).sort()
  const expected = scenario.expectStatus
  let unexpected = 0
  for (const [status, count] of statuses) {
    const ok = expected === undefined ? status >= 200 && status < 300 : status === expected
    if (!ok) unexpected += count
  }
  const seconds = result.duration > 0 ? result.duration : durationSec
  return {
    requests: latencies.length,
    durationSec: seconds,
    rps: latencies.length / seconds,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    errors: unexpected + result.errors,
    socketErrors: result.errors,
    timeouts: result.timeouts,
    statuses: Object.fromEntries(statuses)
  }
}
