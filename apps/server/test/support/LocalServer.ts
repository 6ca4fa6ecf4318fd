import { Effect } from "effect"
import { randomUUID } from "node:crypto"
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

/**
 * A local server that counts what is sent to it (a webhook receiver): its URL ends in a path of its own, and only
 * calls under that path reach `listener`; any other is answered 404. Test files run side by side, and a server
 * of another file may still be calling a receiver that has closed: the system gives its port to the next one
 * that listens, and those calls must not count as this receiver's.
 */
export const makeLocalReceiver = (listener: RequestListener) => {
  const path = `/receiver/${randomUUID()}`
  return makeLocalServer((request, response) => {
    if (request.url === path || request.url?.startsWith(`${path}/`) || request.url?.startsWith(`${path}?`)) {
      return listener(request, response)
    }
    request.resume()
    response.writeHead(404, { "content-type": "text/plain" }).end("Not this receiver")
  }).pipe(Effect.map((origin) => `${origin}${path}`))
}
