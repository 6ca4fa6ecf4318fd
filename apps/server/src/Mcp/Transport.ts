import { McpServer } from "@effect/ai"
import { RpcSerialization, RpcServer } from "@effect/rpc"
import { Effect, Mailbox, Option, type Redacted } from "effect"
import { bearerTokenOf } from "../Users/Authentication.js"

/**
 * The token of a request message's Authorization header, as the HTTP protocol copied it there (Authentication
 * accepted it before the request reached the protocol, see Http.ts).
 */
const tokenIn = (headers: ReadonlyArray<unknown> | undefined) => {
  const authorization = headers?.find((header): header is readonly [string, string] =>
    Array.isArray(header) && header[0] === "authorization" && typeof header[1] === "string"
  )
  return authorization === undefined ? Option.none() : bearerTokenOf(authorization[1])
}

/**
 * The streamable-HTTP transport of `/mcp`: @effect/rpc's HTTP protocol, in which each POST is a client of its
 * own, wrapped so that the bearer token of each POST is remembered for the tools that its messages call (an
 * MCP tool handler sees its client's id, not the request's headers), and forgotten when that client ends or
 * goes away. A client is one request: two callers never share one, nor its token.
 */
export class McpTransport extends Effect.Service<McpTransport>()("McpTransport", {
  scoped: Effect.gen(function*() {
    const { httpApp, protocol } = yield* RpcServer.makeProtocolWithHttpApp
    const mcp = yield* McpServer.McpServer
    const tokens = new Map<number, Redacted.Redacted>()

    // McpServer remembers each client that initialized, for its notifications, until one is sent: over HTTP a
    // client is one request, so it is forgotten here when it ends.
    const forget = (clientId: number) =>
      Effect.sync(() => {
        tokens.delete(clientId)
        mcp.initializedClients.delete(clientId)
      })

    const disconnects = yield* Mailbox.make<number>()
    yield* protocol.disconnects.take.pipe(
      Effect.tap(forget),
      Effect.flatMap((clientId) => disconnects.offer(clientId)),
      Effect.forever,
      Effect.forkScoped
    )

    const remembering = RpcServer.Protocol.of({
      ...protocol,
      disconnects,
      run: (handle) =>
        protocol.run((clientId, message) => {
          if (message._tag === "Request") {
            Option.match(tokenIn(message.headers), {
              onNone: () => tokens.delete(clientId),
              onSome: (token) => tokens.set(clientId, token)
            })
          }
          return handle(clientId, message)
        }),
      end: (clientId) => Effect.zipRight(forget(clientId), protocol.end(clientId))
    })

    return {
      /** The `POST /mcp` handler, which the route serves once the caller is authenticated. */
      httpApp,
      protocol: remembering,
      /** The bearer token of the request that this MCP client's messages came in. */
      tokenOf: (clientId: number) => Option.fromNullable(tokens.get(clientId))
    } as const
  }),
  dependencies: [RpcSerialization.layerJsonRpc()]
}) {}
