import { HttpServer } from "@effect/platform"
import { Effect, Layer } from "effect"
import * as Path from "node:path"
import { CurrentDeployment } from "../Deployment.js"
import { CredentialsCipher } from "../Secrets/CredentialsCipher.js"
import { RotationKeys } from "./Http.js"
import { AdminRepo } from "./Repo.js"
import { adminSocketPath, fitsSocketPath, serveAdminApi } from "./Socket.js"

/**
 * On the embedded database, which one process opens, the server answers `pnpm admin` on its data folder's
 * socket: the operator need not stop it. On PostgreSQL the command opens the database itself.
 */
export const AdminSocketLive = Layer.scopedDiscard(Effect.gen(function*() {
  const deployment = yield* CurrentDeployment
  if (deployment._tag !== "Embedded") return
  const path = adminSocketPath(deployment.dataDir)
  if (!fitsSocketPath(path)) {
    return yield* Effect.logWarning(
      `The data folder's path is too long for the admin socket ${path}: stop the server to run \`pnpm admin\``
    )
  }
  const cipher = yield* CredentialsCipher
  yield* serveAdminApi(path).pipe(
    Effect.provideService(RotationKeys, Layer.succeed(CredentialsCipher, cipher)),
    // The public API does not need it: without the socket, `pnpm admin` needs the server stopped, as it did.
    Effect.catchAll((error) =>
      Effect.logWarning(`The admin socket ${path} could not be opened (${error.message}): stop the server to run \`pnpm admin\``)
    )
  )
}))

/**
 * An installation without users says how to make the first one, in a shell on this server's database, how to use
 * its token, and that the CLI's login needs a password, once it answers.
 */
export const FirstRunHintLive = Layer.effectDiscard(Effect.gen(function*() {
  if (yield* (yield* AdminRepo).hasUsers) return
  const { address } = yield* HttpServer.HttpServer
  const deployment = yield* CurrentDeployment
  const anyInterface = address._tag === "TcpAddress" && ["0.0.0.0", "::"].includes(address.hostname)
  const host = address._tag !== "TcpAddress" || anyInterface
    ? "localhost"
    : address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname
  const base = address._tag === "TcpAddress" ? `http://${host}:${address.port}` : "http://localhost"
  // Without this server's settings the command would use (or make) another database: it says which it used.
  const where = deployment._tag === "Postgres"
    ? "in a shell with this server's DATABASE_URL and CREDENTIALS_KEY"
    : `in a shell without DATABASE_URL, with DATA_DIR=${Path.resolve(deployment.dataDir)} or in this folder`
  yield* Effect.logInfo(
    `No user yet. Create the first (it prints a token, shown once), ${where}: ` +
      "pnpm admin users create --email you@example.com --name You ; then: " +
      `curl -H "Authorization: Bearer <token>" ${base}/v1/organizations ; ` +
      "for `postline login` (the CLI), give the user a password too: " +
      "pnpm admin users set-password --email you@example.com (reads it from standard input)"
  )
})).pipe(Layer.provide(AdminRepo.Default))

/** What the running server does for its operator. */
export const AdminServerLive = Layer.merge(AdminSocketLive, FirstRunHintLive)
