import { Config, Deferred, Duration, Effect, Layer } from "effect"
import { createServer, type ServerOptions, type ServerResponse } from "node:http"
import { answerClientErrors, maxHeaderBytes } from "./ClientErrors.js"

export const ShutdownGraceConfig = Config.integer("SHUTDOWN_GRACE_SECONDS").pipe(
  Config.withDefault(10),
  Config.validate({ message: "SHUTDOWN_GRACE_SECONDS must be 0 or more", validation: (seconds) => seconds >= 0 }),
  Config.map(Duration.seconds)
)

const unavailable = (response: ServerResponse, message: string) => {
  const body = JSON.stringify({ _tag: "ServiceUnavailable", message })
  response.writeHead(503, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    connection: "close"
  })
  response.end(body)
}

/**
 * The node server around the API, and its stop. It listens before anything else is built and
 * answers 503 until the API attaches, and again once the API has detached at shutdown: a request
 * on an open keep-alive connection then gets an answer and `Connection: close`, not a reset.
 */
export const makeServerLifecycle = () => {
  const open = new Set<ServerResponse>()
  let stopping = false
  const settled = Effect.runSync(Deferred.make<void>())

  /** The server, with `options` (its timeouts); what Node's parser refuses gets a JSON answer too. */
  const createLifecycleServer = (options: ServerOptions) => {
    const server = createServer({ ...options, maxHeaderSize: maxHeaderBytes })
    answerClientErrors(server)
    server.prependListener("request", (_request, response) => {
      open.add(response)
      response.once("close", () => {
        open.delete(response)
        if (stopping && open.size === 0) Deferred.unsafeDone(settled, Effect.void)
      })
      if (stopping) response.setHeader("connection", "close")
    })
    // These are the only listeners while the API is not attached.
    const ownListeners = server.listenerCount("request") + 1
    server.on("request", (_request, response) => {
      if (server.listenerCount("request") > ownListeners) return
      unavailable(response, stopping ? "The server is shutting down" : "The server is starting: try again shortly")
    })
    return server
  }

  /**
   * Waits up to `grace` for the requests in flight, before the database they use closes; each
   * ends its connection when answered. Requests that come meanwhile get 503.
   */
  const drain = (grace: Duration.Duration) =>
    Effect.suspend(() => {
      stopping = true
      for (const response of open) if (!response.headersSent) response.setHeader("connection", "close")
      if (open.size === 0) return Effect.void
      return Deferred.await(settled).pipe(
        Effect.timeout(grace),
        Effect.catchAll(() => Effect.logWarning(`Stopping with ${open.size} requests still unanswered after the grace period`))
      )
    })

  /** Built after the database and before the API, so that at shutdown it runs between them. */
  const DrainLive = Layer.scopedDiscard(
    Effect.flatMap(ShutdownGraceConfig, (grace) => Effect.addFinalizer(() => drain(grace)))
  )

  return { createServer: createLifecycleServer, DrainLive }
}
