import { Effect } from "effect"
import { createServer, type RequestListener } from "node:http"
import type { AddressInfo } from "node:net"

/** A node:http server on a free port of 127.0.0.1 for the scope; its URL. */
export const makeLocalServer = (listener: RequestListener) =>
  Effect.acquireRelease(
    Effect.async<ReturnType<typeof createServer>>((resume) => {
      const server = createServer(listener)
      server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
    }),
    (server) =>
      Effect.async<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  ).pipe(Effect.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`))
