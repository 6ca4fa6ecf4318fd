import { CliConfig, Command, ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Logger, LogLevel } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { AdminClient, adminCommand } from "./Admin/Cli.js"
import { RotationKeys } from "./Admin/Http.js"
import { adminSocketPath, serveAdminApi, socketAnswers, socketHttpClient } from "./Admin/Socket.js"
import { DatabaseLive } from "./Database/Database.js"
import { CurrentDeployment, DeploymentLive } from "./Deployment.js"
import { CredentialsCipherLive } from "./Secrets/CredentialsCipher.js"
import { databaseOf, serverVersion } from "./StartupLog.js"

/**
 * The admin API this command talks to: the running server's, through its data folder's socket, when a
 * server holds the embedded database; otherwise one this process serves itself, on the configured database,
 * on a socket in a private temporary folder.
 */
const AdminTransportLive = Layer.unwrapScoped(Effect.gen(function*() {
  const deployment = yield* CurrentDeployment
  // Said on standard error, since a shell without the server's DATABASE_URL would write to an embedded database.
  const using = `Using ${databaseOf(deployment).words}`
  if (deployment._tag === "Embedded") {
    const running = adminSocketPath(deployment.dataDir)
    if (yield* socketAnswers(running)) {
      yield* Console.error(`${using}, through the server running on it (DATABASE_URL is not set)`)
      return socketHttpClient(running)
    }
    // `./data` from another folder than the server's would be a new, empty installation, not the server's.
    if (!Fs.existsSync(deployment.dataDir)) {
      return yield* Effect.fail(
        new Error(`There is no data folder at ${Path.resolve(deployment.dataDir)}: run this where the server runs, or set DATA_DIR`)
      )
    }
  }
  yield* Console.error(deployment._tag === "Embedded" ? `${using} (DATABASE_URL is not set)` : using)
  const folder = yield* Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "postline-admin-"))),
    (folder) => Effect.sync(() => Fs.rmSync(folder, { recursive: true, force: true }))
  )
  const own = Path.join(folder, "admin.sock")
  const keys = Layer.succeed(RotationKeys, CredentialsCipherLive.pipe(Layer.provide(Layer.succeed(CurrentDeployment, deployment))))
  return Layer.merge(
    Layer.scopedDiscard(serveAdminApi(own)).pipe(Layer.provide(Layer.merge(DatabaseLive, keys))),
    socketHttpClient(own)
  )
}))

/** Logs go to standard error: standard output carries a command's answer alone, for scripts to parse. */
const stderrLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.prettyLogger({ stderr: true, colors: process.stderr.isTTY === true })
)

// Provided to the commands' handlers: usage, --help and a refused option open no database.
const run = Command.run(
  Command.provide(adminCommand, AdminClient.Default.pipe(Layer.provide(AdminTransportLive), Layer.provide(DeploymentLive))),
  { name: "pnpm admin", version: serverVersion }
)

run(process.argv).pipe(
  Effect.catchAll((error) =>
    Effect.zipRight(
      // @effect/cli has printed its own usage errors already.
      ValidationError.isValidationError(error) ? Effect.void : Console.error(`Error: ${"message" in error ? error.message : String(error)}`),
      Effect.sync(() => {
        process.exitCode = 1
      })
    )
  ),
  Effect.provide([NodeContext.layer, CliConfig.layer({ showBuiltIns: false })]),
  Effect.provide(Layer.merge(stderrLogger, Logger.minimumLogLevel(LogLevel.Warning))),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
