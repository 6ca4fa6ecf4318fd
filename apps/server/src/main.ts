import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Either, Layer, Logger, LogLevel } from "effect"
import { AdminServerLive } from "./Admin/Server.js"
import { BillingSettings } from "./Billing/Settings.js"
import { DatabaseLive } from "./Database/Database.js"
import { SoleProcess } from "./Database/SoleProcess.js"
import { CurrentDeployment, DeploymentLive } from "./Deployment.js"
import { EndStartupTurnLive } from "./Database/StartupTurn.js"
import { JsonLogger, LogLevelConfig } from "./Logging.js"
import { makeHttpLive } from "./Api.js"
import { MediaStorageLive } from "./Assets/StorageConfig.js"
import { StorageSweepLive } from "./Assets/Sweep.js"
import { ListenAddressConfig, listenFailure, makeServerLifecycle } from "./Http/ServerLifecycle.js"
import { serverTimeouts } from "./Http/ServerTimeouts.js"
import { SendScope } from "./Publishing/SendScope.js"
import { ProvidersOutboundLive } from "./Publishing/Settings.js"
import { CredentialsCipherLive } from "./Secrets/CredentialsCipher.js"
import { OAuthNetworks } from "./Providers/OAuthNetworks.js"
import { SocialProviders } from "./Providers/Registry.js"
import { XSettings } from "./Providers/XSettings.js"
import { BlueskyOAuthSettings } from "./Providers/BlueskyOAuthClient.js"
import { SchedulerLive } from "./Workers.js"
import { CredentialsKeysCheckLive } from "./SocialAccounts/CredentialsKeysCheck.js"
import { logStartFailure, StartupError } from "./StartupError.js"
import { logStopped, withStartStopLog } from "./StartupLog.js"
import { runMain } from "./RunMain.js"
import { withTracing } from "./Tracing.js"

const lifecycle = makeServerLifecycle()

/** The listener on PORT and HOST; a port in use says so in one line. */
const ServerLive = Layer.unwrapEffect(Effect.gen(function*() {
  const timeouts = yield* serverTimeouts
  const address = yield* ListenAddressConfig
  return NodeHttpServer.layer(() => lifecycle.createServer(timeouts), address).pipe(Layer.mapError(listenFailure(address)))
}))

/** A missing or malformed key says what to do in one line, like any other setting. */
const CipherLive = CredentialsCipherLive.pipe(Layer.mapError((error) =>
  error._tag === "CredentialsKeyError" ? new StartupError({ message: error.message }) : error
))

/**
 * The social networks and their sign-in, reached through the outbound guard; credentials encrypted with the configured key, which
 * must read every stored record (CredentialsKeysCheck.ts) before anything, the scheduler first, reads one.
 */
const ProvidersLive = Layer.merge(SocialProviders.Default, OAuthNetworks.Default).pipe(
  Layer.provide(ProvidersOutboundLive),
  Layer.provide([XSettings.Default, BlueskyOAuthSettings.Default]),
  Layer.provideMerge(CredentialsKeysCheckLive.pipe(Layer.provideMerge(CipherLive)))
)

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
const makeAppLive = (level: LogLevel.LogLevel) =>
  makeHttpLive({ accessLog: LogLevel.lessThanEqual(level, LogLevel.Info) }).pipe(
    Layer.merge(AdminServerLive),
    withStartStopLog,
    Layer.provide(lifecycle.DrainLive),
    // Post-now sends run in it (shared with the API's PostNow): closed after the drain, a send in flight ends first.
    Layer.provide(SendScope.Default),
    Layer.provide(EndStartupTurnLive),
    Layer.provide(ScheduledPublishingLive),
    Layer.provide(Layer.provideMerge(StorageSweepLive, MediaStorageLive)),
    Layer.provide(ProvidersLive),
    Layer.provide(DatabaseLive),
    // Read before the database opens, so that invalid billing settings stop the start at once; the API shares it.
    Layer.provide(BillingSettings.Default),
    Layer.provide(DeploymentLive),
    Layer.provide(ServerLive)
  )

/**
 * A start that fails ends with one FATAL line (StartupError.ts) and exit code 1. LOG_LEVEL is read first;
 * an unknown one is such a failure, said at the default level.
 */
Effect.gen(function*() {
  const level = yield* Effect.either(LogLevelConfig)
  yield* Effect.flatMap(level, (level) => makeAppLive(level).pipe(withTracing, Layer.launch, logStopped)).pipe(
    Effect.tapErrorCause(logStartFailure),
    Logger.withMinimumLogLevel(Either.getOrElse(level, () => LogLevel.Info))
  )
}).pipe(
  Effect.provide(JsonLogger),
  runMain({ disablePrettyLogger: true, disableErrorReporting: true })
)
