import { HttpMiddleware, HttpServer } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer, Logger, LogLevel } from "effect"
import { createServer } from "node:http"
import { DatabaseLive } from "./Database/Database.js"
import { makeHttpLive } from "./Http/Api.js"

const ServerLive = NodeHttpServer.layerConfig(createServer, {
  port: Config.port("PORT").pipe(Config.withDefault(3000)),
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0"))
})

const logLevel = Config.logLevel("LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info))

/** JSON logs from `LOG_LEVEL` up; at INFO and below, an access log line per request. */
const AppLive = Layer.unwrapEffect(
  Effect.map(logLevel, (level) =>
    makeHttpLive({ accessLog: LogLevel.lessThanEqual(level, LogLevel.Info) }).pipe(
      HttpServer.withLogAddress,
      Layer.provide(ServerLive),
      Layer.provide(DatabaseLive)
    ))
)

AppLive.pipe(
  // No trace exporter is configured: spans would be built and dropped on every request and statement.
  HttpMiddleware.withTracerDisabledWhen(() => true),
  Layer.provide(Layer.setTracerEnabled(false)),
  Layer.launch,
  Effect.tapErrorCause((cause) => Effect.logFatal("The server could not start", cause)),
  Effect.provide(Logger.json),
  Effect.provide(Layer.unwrapEffect(Effect.map(Effect.orElseSucceed(logLevel, () => LogLevel.Info), Logger.minimumLogLevel))),
  NodeRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true })
)
