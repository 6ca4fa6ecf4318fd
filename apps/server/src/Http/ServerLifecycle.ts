import type { HttpServerError } from "@effect/platform"
import { Config, Deferred, Duration, Effect, Layer } from "effect"
import { createServer, type ServerOptions, type ServerResponse } from "node:http"
import { StartupError } from "../StartupError.js"
import { answerClientErrors, maxHeaderBytes } from "./ClientErrors.js"

/** Where the server listens: `PORT` (3000) on `HOST` (0.0.0.0, every address of the machine). */
export const ListenAddressConfig = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(3000)),
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0"))
})

/** A listener Node could not open, said as what to change; other failures pass as they are. */
export const listenFailure = (address: { readonly port: number; readonly host: string }) =>
(error: HttpServerError.ServeError): HttpServerError.ServeError | StartupError => {
  const code = (error.cause as { readonly code?: unknown } | undefined)?.code
  switch (code) {
    case "EADDRINUSE":
      return new StartupError({ message: `PORT ${address.port} is in use: stop the other process or set PORT` })
    case "EACCES":
      return new StartupError({
        message: `PORT ${address.port} needs privileges this process does not have: set PORT to 1024 or above`
      })
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new StartupError({
        message: `HOST ${address.host} is not an address of this machine: set HOST (0.0.0.0 listens on all of them)`
      })
  }
  return error
}

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
