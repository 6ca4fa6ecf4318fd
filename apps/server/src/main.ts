import { HttpServer } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer, Logger, LogLevel } from "effect"
import { createServer, type ServerOptions } from "node:http"
import { DatabaseLive } from "./Database/Database.js"
import { JsonLogger } from "./Logging.js"
import { makeHttpLive } from "./Http/Api.js"
import { answerClientErrors, maxHeaderBytes } from "./Http/ClientErrors.js"
import { serverTimeouts } from "./Http/ServerTimeouts.js"
import { OutboundLive } from "./Outbound/Outbound.js"
import { CredentialsCipherLive } from "./Providers/CredentialsCipher.js"
import { SocialProviders } from "./Providers/Registry.js"
import { layerCluster, layerSingleProcess } from "./Scheduling/Engine.js"
import { layerScheduler } from "./Scheduling/Scheduler.js"
import { withTracing } from "./Tracing.js"

/**
 * The platform listens as soon as the server exists, and attaches the API
 * when every layer is built: a request in between would get no answer at all.
 * It gets 503 instead, until the API takes over. What Node's parser refuses
 * gets a JSON answer too (`answerClientErrors`).
 */
const createStartingServer = (options: ServerOptions) => {
  const server = createServer({ ...options, maxHeaderSize: maxHeaderBytes })
  answerClientErrors(server)
  const ownListeners = server.listenerCount("request") + 1
  server.on("request", (_request, response) => {
    if (server.listenerCount("request") > ownListeners) return
    response.writeHead(503, { "content-type": "application/json", connection: "close" })
    response.end(JSON.stringify({ _tag: "ServiceUnavailable", message: "The server is starting: try again shortly" }))
  })
  return server
}

const ServerLive = Layer.unwrapEffect(Effect.map(serverTimeouts, (timeouts) =>
  NodeHttpServer.layerConfig(() => createStartingServer(timeouts), {
    port: Config.port("PORT").pipe(Config.withDefault(3000)),
    host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0"))
  })))

const logLevel = Config.logLevel("LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info))

/** The social networks, reached through the outbound guard; credentials encrypted with the configured key. */
const ProvidersLive = Layer.merge(SocialProviders.Default.pipe(Layer.provide(OutboundLive)), CredentialsCipherLive)

/** On PostgreSQL, each process is a runner of one cluster; the embedded database has one process. */
const SchedulerLive = Layer.unwrapEffect(
  Effect.map(Config.option(Config.string("DATABASE_URL")), (url) =>
    layerScheduler(url._tag === "Some" ? layerCluster : layerSingleProcess))
)

/** JSON logs from `LOG_LEVEL` up; at INFO and below, an access log line per request. */
const AppLive = Layer.unwrapEffect(
  Effect.map(logLevel, (level) =>
    makeHttpLive({ accessLog: LogLevel.lessThanEqual(level, LogLevel.Info) }).pipe(
      HttpServer.withLogAddress,
      Layer.provide(ServerLive),
      Layer.provide(SchedulerLive),
      Layer.provide(ProvidersLive),
      Layer.provide(DatabaseLive)
    ))
)

AppLive.pipe(
  withTracing,
  Layer.launch,
  Effect.tapErrorCause((cause) => Effect.logFatal("The server could not start", cause)),
  Effect.provide(JsonLogger),
  Effect.provide(Layer.unwrapEffect(Effect.map(Effect.orElseSucceed(logLevel, () => LogLevel.Info), Logger.minimumLogLevel))),
  NodeRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
)
