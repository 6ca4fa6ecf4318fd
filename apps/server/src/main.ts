import { HttpServer } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer, Logger, LogLevel } from "effect"
import { DatabaseLive } from "./Database/Database.js"
import { SoleProcess } from "./Database/SoleProcess.js"
import { CurrentDeployment, DeploymentLive } from "./Deployment.js"
import { EndStartupTurnLive } from "./Database/StartupTurn.js"
import { JsonLogger } from "./Logging.js"
import { makeHttpLive } from "./Api.js"
import { MediaStorageLive } from "./Assets/StorageConfig.js"
import { StorageSweepLive } from "./Assets/Sweep.js"
import { makeServerLifecycle } from "./Http/ServerLifecycle.js"
import { serverTimeouts } from "./Http/ServerTimeouts.js"
import { OutboundLive } from "./Outbound/Outbound.js"
import { CredentialsCipherLive } from "./Providers/CredentialsCipher.js"
import { SocialProviders } from "./Providers/Registry.js"
import { SchedulerLive } from "./Publishing/Scheduler.js"
import { withTracing } from "./Tracing.js"

const lifecycle = makeServerLifecycle()

const ServerLive = Layer.unwrapEffect(Effect.map(serverTimeouts, (timeouts) =>
  NodeHttpServer.layerConfig(() => lifecycle.createServer(timeouts), {
    port: Config.port("PORT").pipe(Config.withDefault(3000)),
    host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0"))
  })))

const logLevel = Config.logLevel("LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info))

/** The social networks, reached through the outbound guard; credentials encrypted with the configured key. */
const ProvidersLive = Layer.merge(SocialProviders.Default.pipe(Layer.provide(OutboundLive)), CredentialsCipherLive)

/** On PostgreSQL, processes share the scheduled work; the embedded database has one process. */
const ScheduledPublishingLive = Layer.unwrapEffect(
  Effect.map(CurrentDeployment, (deployment) =>
    SchedulerLive.pipe(Layer.provide(Layer.succeed(SoleProcess, deployment._tag === "Embedded"))))
)

/**
 * JSON logs from `LOG_LEVEL` up; at INFO and below, an access log line per request.
 * Layers are built from the last `provide` up and closed the other way: the listener comes
 * first (503 while the rest starts), and draining sits between the API and the database, so that
 * at shutdown requests in flight finish before the database closes.
 */
const AppLive = Layer.unwrapEffect(
  Effect.map(logLevel, (level) =>
    makeHttpLive({ accessLog: LogLevel.lessThanEqual(level, LogLevel.Info) }).pipe(
      HttpServer.withLogAddress,
      Layer.provide(lifecycle.DrainLive),
      Layer.provide(EndStartupTurnLive),
      Layer.provide(ScheduledPublishingLive),
      Layer.provide(Layer.provideMerge(StorageSweepLive, MediaStorageLive)),
      Layer.provide(ProvidersLive),
      Layer.provide(DatabaseLive),
      Layer.provide(DeploymentLive),
      Layer.provide(ServerLive)
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
