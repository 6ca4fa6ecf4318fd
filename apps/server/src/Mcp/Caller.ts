import { McpSchema } from "@effect/ai"
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest, HttpServer } from "@effect/platform"
import { PostlineApi } from "@postline/domain"
import { ToolCaller } from "@postline/mcp"
import { Effect, Layer, Option } from "effect"
import { McpTransport } from "./Transport.js"

const anyAddress = new Set(["0.0.0.0", "::", ""])

/** Where this server is reached from this machine: its own listener, on the loopback when it listens on every address. */
const loopbackUrl = (address: HttpServer.TcpAddress) => {
  const host = anyAddress.has(address.hostname)
    ? "127.0.0.1"
    : address.hostname.includes(":")
    ? `[${address.hostname}]`
    : address.hostname
  return `http://${host}:${address.port}`
}

/**
 * The tools of `/mcp` call this server's own API, over the loopback, with the bearer token of the request that
 * called them: every call is then an API request of that caller like any other, with the same authentication,
 * access rules, rate limits, idempotency, access log and error bodies, and no second way in to keep in step.
 *
 * One client serves every caller, derived at the first tool call (it compiles every endpoint's codecs: a third of
 * a second of a server's start, which most servers would pay for nothing): each of its requests carries the token
 * of the MCP client whose tool call is making it, found by the id that the call's fiber carries.
 */
export const LoopbackToolCallerLive = Layer.effect(
  ToolCaller,
  Effect.gen(function*() {
    const transport = yield* McpTransport
    const { address } = yield* HttpServer.HttpServer
    if (address._tag === "UnixAddress") return yield* Effect.dieMessage("The MCP tools call the API over TCP: listen on HOST and PORT")

    const callerToken = Effect.map(
      Effect.serviceOption(McpSchema.McpServerClient),
      Option.flatMap(({ clientId }) => transport.tokenOf(clientId))
    )
    const asCaller = HttpClient.mapRequestEffect(yield* HttpClient.HttpClient, (request) =>
      Effect.map(callerToken, Option.match({
        // Without a token the API answers 401, which the tool says.
        onNone: () => request,
        onSome: (token) => HttpClientRequest.bearerToken(request, token)
      })))
    const client = yield* Effect.cached(HttpApiClient.make(PostlineApi, { baseUrl: loopbackUrl(address) }).pipe(
      Effect.provideService(HttpClient.HttpClient, asCaller)
    ))

    return ToolCaller.of({ client })
  })
).pipe(Layer.provide(FetchHttpClient.layer))
