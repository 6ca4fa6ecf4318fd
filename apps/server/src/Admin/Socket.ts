import { HttpApiBuilder } from "@effect/platform"
import { NodeHttpClient, NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import { createServer } from "node:http"
import { connect } from "node:net"
import * as Path from "node:path"
import { AdminHttpLive } from "./Http.js"

/** The embedded database's admin socket, in a folder of the data folder that only the server's user may enter. */
export const adminSocketPath = (dataDir: string) => Path.resolve(dataDir, "admin", "postline.sock")

/** What a Unix socket's path may hold (sun_path, less its terminating NUL): 108 bytes on Linux, 104 elsewhere. */
const maxSocketPathBytes = process.platform === "linux" ? 107 : 103

export const fitsSocketPath = (path: string) => Buffer.byteLength(path) <= maxSocketPathBytes

/**
 * Serves the admin API on a Unix socket at `path` for as long as the scope lasts. The socket's folder is this
 * user's alone (0700) before the socket exists, so that nobody else can reach it even for a moment. A socket
 * left by a process that died is replaced: the caller holds what the socket serves (the data folder's lock, or
 * a folder of its own). The API is built on its own (`Layer.buildWithScope`), apart from the public API's
 * router, so that none of its routes can reach the public port.
 */
export const serveAdminApi = (path: string) =>
  Effect.gen(function*() {
    yield* Effect.try(() => {
      Fs.mkdirSync(Path.dirname(path), { recursive: true, mode: 0o700 })
      Fs.chmodSync(Path.dirname(path), 0o700)
      Fs.rmSync(path, { force: true })
    })
    const scope = yield* Effect.scope
    const context = yield* Effect.context<Layer.Layer.Context<typeof AdminHttpLive>>()
    yield* Layer.buildWithScope(
      HttpApiBuilder.serve().pipe(
        Layer.provide(AdminHttpLive),
        Layer.provide(NodeHttpServer.layer(createServer, { path })),
        Layer.provide(Layer.succeedContext(context))
      ),
      scope
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(path, { force: true })))
  })

/** Whether a server answers on the socket (a file left by a process that died refuses). */
export const socketAnswers = (path: string) =>
  Effect.async<boolean>((resume) => {
    const socket = connect(path)
    socket.once("connect", () => (socket.destroy(), resume(Effect.succeed(true))))
    socket.once("error", () => resume(Effect.succeed(false)))
  })

/**
 * An HTTP client whose every request goes to the Unix socket at `path`. Node's agent passes its options on to each
 * connection, `socketPath` included, though its type does not list it.
 */
export const socketHttpClient = (path: string) =>
  NodeHttpClient.layerWithoutAgent.pipe(Layer.provide(NodeHttpClient.makeAgentLayer({ socketPath: path } as never)))
