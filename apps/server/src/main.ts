import { HttpServer } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer, Logger, LogLevel } from "effect"
import { createServer } from "node:http"
import { DatabaseLive } from "./Database/Database.js"
import { HttpLive } from "./Http/Api.js"

const ServerLive = NodeHttpServer.layerConfig(createServer, {
  port: Config.port("PORT").pipe(Config.withDefault(3000)),
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0"))
})

const LoggingLive = Layer.unwrapEffect(
  Effect.map(
    Config.logLevel("LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info)),
    (level) => Layer.merge(Logger.json, Logger.minimumLogLevel(level))
  )
)

HttpLive.pipe(
  HttpServer.withLogAddress,
  Layer.provide(ServerLive),
  Layer.provide(DatabaseLive),
  Layer.provide(LoggingLive),
  Layer.launch,
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
