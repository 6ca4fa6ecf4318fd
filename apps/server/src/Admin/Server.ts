import { HttpServer } from "@effect/platform"
import { Effect, Layer } from "effect"
import { CurrentDeployment } from "../Deployment.js"
import { CredentialsCipher } from "../Providers/CredentialsCipher.js"
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

/** An installation without users says how to make the first one, and how to use its token, once it answers. */
export const FirstRunHintLive = Layer.effectDiscard(Effect.gen(function*() {
  if (yield* (yield* AdminRepo).hasUsers) return
  const { address } = yield* HttpServer.HttpServer
  const anyInterface = address._tag === "TcpAddress" && ["0.0.0.0", "::"].includes(address.hostname)
  const host = address._tag !== "TcpAddress" || anyInterface
    ? "localhost"
    : address.hostname.includes(":") ? `[${address.hostname}]` : address.hostname
  const base = address._tag === "TcpAddress" ? `http://${host}:${address.port}` : "http://localhost"
  yield* Effect.logInfo(
    "No user yet. Create the first (it prints a token, shown once): " +
      "pnpm admin users create --email you@example.com --name You ; then: " +
      `curl -H "Authorization: Bearer <token>" ${base}/v1/organizations`
  )
})).pipe(Layer.provide(AdminRepo.Default))

/** What the running server does for its operator. */
export const AdminServerLive = Layer.merge(AdminSocketLive, FirstRunHintLive)
