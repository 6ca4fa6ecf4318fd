import { HttpServer } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Config, Layer, Logger } from "effect"
import { createServer } from "node:http"
import { DatabaseLive } from "./Database/Database.js"
import { HttpLive } from "./Http/Api.js"

const ServerLive = NodeHttpServer.layerConfig(createServer, {
  port: Config.port("PORT").pipe(Config.withDefault(3000)),
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0"))
})

HttpLive.pipe(
  HttpServer.withLogAddress,
  Layer.provide(ServerLive),
  Layer.provide(DatabaseLive),
  Layer.provide(Logger.json),
  Layer.launch,
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
