import { McpServer } from "@effect/ai"
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { RpcServer } from "@effect/rpc"
import { Authentication, BadRequest, CallerRateLimit, CurrentCaller } from "@postline/domain"
import { PostlineToolsLive, serverInfo } from "@postline/mcp"
import { Effect, Layer } from "effect"
import { RateLimitMiddlewareLive } from "../RateLimits/Middleware.js"
import { AuthenticationLive } from "../Users/Authentication.js"
import { LoopbackToolCallerLive } from "./Caller.js"
import { McpTransport } from "./Transport.js"

const mcpPath = "/mcp"

/**
 * Every request of the endpoint is an API request: its bearer token checked by the API's Authentication (401
 * with `WWW-Authenticate: Bearer` otherwise, as the error bodies answer it) and counted against its caller's
 * rate limit (429 with Retry-After past it).
 */
const asCaller = Effect.gen(function*() {
  const authentication = yield* Authentication
  const countRequest = yield* CallerRateLimit
  return <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.gen(function*() {
      const credential = yield* HttpApiBuilder.securityDecode(Authentication.security.bearerAuth)
      const caller = yield* authentication.bearerAuth(credential)
      yield* Effect.provideService(countRequest, CurrentCaller, caller)
      return yield* handler
    })
})

// Streamable HTTP: a server that opens no event stream answers GET with 405, and one without sessions DELETE too.
const postOnly = HttpServerResponse.unsafeJson({
  _tag: "MethodNotAllowed",
  message: "The MCP endpoint takes JSON-RPC messages by POST; it opens no event stream and keeps no session"
}, { status: 405, headers: { allow: "POST" } })

const isRequest = (message: unknown) =>
  typeof message === "object" && message !== null && "method" in message && "id" in message && message.id !== null

/**
 * A JSON-RPC batch would be one request, counted once against the rate limit, whose messages (thousands in a
 * body) all run at once: MCP 2025-06-18, the version McpServer negotiates, has no batches ("the body of the
 * POST request MUST be a single JSON-RPC request, notification, or response"). Like any input it cannot accept,
 * it is refused with a 400, whose body is the API's, as for a body that is not JSON.
 */
const batchRefused =
  "The MCP endpoint takes one JSON-RPC message per request, not a batch (an array): MCP 2025-06-18 has no batching"

/**
 * `POST /mcp`: one JSON-RPC message, answered by the transport. A body that is not JSON, or a batch, gets the
 * API's 400; a notification or a response gets 202 and no body, as streamable HTTP has it.
 */
const serveMessage = (httpApp: McpTransport["httpApp"]) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    // Unreadable JSON is a defect that the error bodies answer with 400 BadRequest, as for the API's endpoints.
    const body = yield* Effect.orDie(request.json)
    if (Array.isArray(body)) return yield* new BadRequest({ message: batchRefused })
    const answer = yield* httpApp
    return isRequest(body) ? answer : HttpServerResponse.empty({ status: 202 })
  })

/** `/mcp` on the API's router, beside the API and not in its OpenAPI document. */
const McpRouteLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const transport = yield* McpTransport
    const guarded = yield* asCaller
    yield* router.post(mcpPath, guarded(serveMessage(transport.httpApp)))
    yield* router.get(mcpPath, guarded(Effect.succeed(postOnly)))
    yield* router.del(mcpPath, guarded(Effect.succeed(postOnly)))
  })
)

/** The MCP server itself, answering the messages that arrive through the transport. */
const McpServerLive = Layer.scopedDiscard(
  Effect.flatMap(McpTransport, ({ protocol }) =>
    Effect.forkScoped(McpServer.run(serverInfo).pipe(Effect.provideService(RpcServer.Protocol, protocol))))
)

/**
 * Postline's MCP server over streamable HTTP at `/mcp`: the same tools as `postline mcp`, each call acting as
 * the bearer of the request that made it.
 */
export const McpHttpLive = Layer.mergeAll(McpRouteLive, McpServerLive, PostlineToolsLive).pipe(
  Layer.provide(LoopbackToolCallerLive),
  Layer.provide(McpTransport.Default),
  Layer.provide(McpServer.McpServer.layer),
  Layer.provide([AuthenticationLive, RateLimitMiddlewareLive])
)
