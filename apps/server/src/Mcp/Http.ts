import { McpServer } from "@effect/ai"
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { RpcServer } from "@effect/rpc"
import { Authentication, CallerRateLimit, CurrentCaller } from "@postline/domain"
import { PostlineToolsLive, serverInfo } from "@postline/mcp"
import { type Context, Effect, Layer, Option } from "effect"
import { RateLimitMiddlewareLive } from "../RateLimits/Middleware.js"
import { AuthenticationLive } from "../Users/Authentication.js"
import { LoopbackToolCallerLive } from "./Caller.js"
import * as JsonRpc from "./JsonRpc.js"
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
      return yield* Effect.provideService(handler, CurrentCaller, caller)
    })
})

// Streamable HTTP: a server that opens no event stream answers GET with 405, and one without sessions DELETE too.
const postOnly = HttpServerResponse.unsafeJson({
  _tag: "MethodNotAllowed",
  message: "The MCP endpoint takes JSON-RPC messages by POST; it opens no event stream and keeps no session"
}, { status: 405, headers: { allow: "POST" } })

/**
 * MCP 2025-03-26 has JSON-RPC batches; 2025-06-18, McpServer's latest, has none ("the body of the POST request
 * MUST be a single JSON-RPC request, notification, or response"). A client that negotiated 2025-03-26 says so in
 * the MCP-Protocol-Version header of each request: its batches are served, of at most `maxBatchMessages`
 * messages, each counted against the caller's rate limit. Without that header a batch is refused (400), as MCP
 * 2025-06-18 has it: one request whose thousands of messages would all run at once.
 */
const batchingVersion = "2025-03-26"
const maxBatchMessages = 20
const batchRefused =
  "The MCP endpoint takes one JSON-RPC message per request, not a batch (an array): MCP 2025-06-18 has no batching"
const batchBounds = `Invalid Request: a batch holds 1 to ${maxBatchMessages} messages`

/**
 * Input the endpoint cannot accept: 400, whose body is both a JSON-RPC error answer (id null when the request's
 * could not be read), as streamable HTTP has it, and the API's error (`_tag`, `message`).
 */
const refused = (message: string, answer: ReturnType<typeof JsonRpc.errorAnswer>) =>
  HttpServerResponse.unsafeJson({ _tag: "BadRequest", message, ...answer }, { status: 400 })

const parsed = (text: string): Option.Option<unknown> => {
  try {
    return Option.some(JSON.parse(text))
  } catch {
    return Option.none()
  }
}

/** The request as the transport reads it (its headers and its text), its body replaced. */
const withBody = (request: HttpServerRequest.HttpServerRequest, body: string): HttpServerRequest.HttpServerRequest =>
  Object.create(request, { text: { value: Effect.succeed(body) } })

/** What the transport answered, as JSON: McpServer's answer to the request passed on. */
const answerOf = (response: HttpServerResponse.HttpServerResponse) =>
  response.body._tag === "Uint8Array" ? Option.getOrNull(parsed(new TextDecoder().decode(response.body.body))) : null

/**
 * `POST /mcp`: one JSON-RPC message. A request of a method McpServer serves goes to the transport under an id
 * it can take and is answered under its own (JsonRpc.ts); a notification or a response gets 202 and no body, as
 * streamable HTTP has it. A body that is not JSON (-32700) or is no JSON-RPC message (-32600) gets 400; an unknown
 * method (-32601) and params that are not an object (-32602) are answered as JSON-RPC errors. A batch, only
 * under MCP 2025-03-26 (`batchingVersion`), is served message by message.
 */
const serveMessage = (
  httpApp: McpTransport["httpApp"],
  countRequest: Context.Tag.Service<CallerRateLimit>
) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = parsed(yield* Effect.orDie(request.text))
    if (Option.isNone(body)) {
      const message = "The request body is not valid JSON"
      return refused(message, JsonRpc.errorAnswer(null, JsonRpc.errorCodes.parseError, `Parse error: ${message}`))
    }
    const passOn = (message: unknown) =>
      Effect.provideService(httpApp, HttpServerRequest.HttpServerRequest, withBody(request, JSON.stringify(message)))
    if (Array.isArray(body.value)) {
      if (request.headers["mcp-protocol-version"] !== batchingVersion) {
        return refused(batchRefused, JsonRpc.errorAnswer(null, JsonRpc.errorCodes.invalidRequest, `Invalid Request: ${batchRefused}`))
      }
      const messages: ReadonlyArray<unknown> = body.value
      if (messages.length === 0 || messages.length > maxBatchMessages) {
        return refused(batchBounds, JsonRpc.errorAnswer(null, JsonRpc.errorCodes.invalidRequest, batchBounds))
      }
      // The POST counted as one request already.
      yield* Effect.forEach(messages.slice(1), () => countRequest, { discard: true })
      return yield* serveBatch(messages.map(JsonRpc.check), passOn)
    }
    const checked = JsonRpc.check(body.value)
    switch (checked._tag) {
      case "Refused":
        return checked.invalidRequest
          ? refused(checked.answer.error.message, checked.answer)
          : HttpServerResponse.unsafeJson(checked.answer)
      case "NoAnswer": {
        if (checked.message !== null) yield* passOn(checked.message)
        return HttpServerResponse.empty({ status: 202 })
      }
      case "Request": {
        // Each POST is a client of its own with this one request: one internal id serves them all.
        const answer = answerOf(yield* passOn(JsonRpc.withInternalId(checked.message, 1)))
        return HttpServerResponse.unsafeJson(JsonRpc.answerFor(checked.id, answer))
      }
    }
  })

/**
 * A batch's messages: its notifications passed on, then its requests together, each under its place in the
 * batch; the answers in the batch's order, those of messages refused here among them; 202 when nothing is answered.
 */
const serveBatch = <E, R>(
  checked: ReadonlyArray<JsonRpc.Checked>,
  passOn: (message: unknown) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) =>
  Effect.gen(function*() {
    // Each notification alone: in a batch, @effect/rpc would wait for an answer to it, which never comes.
    yield* Effect.forEach(checked, (message) =>
      message._tag === "NoAnswer" && message.message !== null ? passOn(message.message) : Effect.void, { discard: true })
    const requests = checked.flatMap((message, index) =>
      message._tag === "Request" ? [JsonRpc.withInternalId(message.message, index + 1)] : []
    )
    const answered = requests.length === 0 ? null : answerOf(yield* passOn(requests))
    const answers = new Map((Array.isArray(answered) ? answered : [answered]).flatMap((answer: unknown) =>
      typeof answer === "object" && answer !== null && "id" in answer ? [[answer.id, answer] as const] : []
    ))
    const batch = checked.flatMap((message, index) =>
      message._tag === "Refused"
        ? [message.answer]
        : message._tag === "Request"
        ? [JsonRpc.answerFor(message.id, answers.get(index + 1) ?? null)]
        : []
    )
    return batch.length === 0 ? HttpServerResponse.empty({ status: 202 }) : HttpServerResponse.unsafeJson(batch)
  })

/** `/mcp` on the API's router, beside the API and not in its OpenAPI document. */
const McpRouteLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const transport = yield* McpTransport
    const guarded = yield* asCaller
    const countRequest = yield* CallerRateLimit
    yield* router.post(mcpPath, guarded(serveMessage(transport.httpApp, countRequest)))
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
