import { Effect } from "effect"
import { createConnection, createServer, type Socket } from "node:net"

/**
 * A TCP proxy in front of a database that can freeze as a stopped process does: connections
 * are still accepted and nothing is closed, but no byte goes through until it resumes.
 */
export interface FreezableProxy {
  readonly port: number
  readonly freeze: () => void
  readonly resume: () => void
}

export const freezableProxy = (target: { readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(
    Effect.async<FreezableProxy & { readonly close: () => void }>((resume) => {
      let frozen = false
      const held: Array<() => void> = []
      const sockets = new Set<Socket>()
      const forward = (from: Socket, to: Socket) => {
        from.on("data", (chunk) => frozen ? held.push(() => to.write(chunk)) : to.write(chunk))
        from.on("close", () => to.destroy())
        from.on("error", () => to.destroy())
      }
      const server = createServer((client) => {
        const upstream = createConnection(target)
        sockets.add(client).add(upstream)
        forward(client, upstream)
        forward(upstream, client)
      })
      server.listen(0, "127.0.0.1", () =>
        resume(Effect.succeed({
          port: (server.address() as { port: number }).port,
          freeze: () => (frozen = true),
          resume: () => {
            frozen = false
            held.splice(0).forEach((write) => write())
          },
          close: () => {
            sockets.forEach((socket) => socket.destroy())
            server.close()
          }
        })))
    }),
    (proxy) => Effect.sync(proxy.close)
  )
