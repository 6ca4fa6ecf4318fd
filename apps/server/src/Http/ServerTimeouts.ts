import { Config } from "effect"
import type { ServerOptions } from "node:http"

const positiveMillis = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: `${name} must be a positive number of milliseconds`, validation: (ms) => ms > 0 })
  )

/**
 * How long a client may take, each a setting (README, Configuration): to send
 * the request line and headers, to send the whole request (a body at most
 * 1 MiB), and to start its next request on a kept-alive connection. Node
 * checks the first two on a timer: here it runs at least every second.
 */
export const serverTimeouts: Config.Config<ServerOptions> = Config.all({
  headersTimeout: positiveMillis("HTTP_HEADERS_TIMEOUT_MS", 10_000),
  requestTimeout: positiveMillis("HTTP_REQUEST_TIMEOUT_MS", 30_000),
  keepAliveTimeout: positiveMillis("HTTP_KEEP_ALIVE_TIMEOUT_MS", 5_000)
}).pipe(
  Config.validate({
    message: "HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS: the headers are part of the request",
    validation: ({ headersTimeout, requestTimeout }) => headersTimeout <= requestTimeout
  }),
  Config.map((timeouts) => ({
    ...timeouts,
    connectionsCheckingInterval: Math.min(1_000, Math.ceil(timeouts.headersTimeout / 4))
  }))
)
