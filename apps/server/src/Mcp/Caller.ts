import { McpSchema } from "@effect/ai"
import { FetchHttpClient, HttpClient, HttpServer } from "@effect/platform"
import { makeClient } from "@postline/domain"
import { ToolCaller, ToolError } from "@postline/mcp"
import { Effect, Layer } from "effect"
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
 */
export const LoopbackToolCallerLive = Layer.effect(
  ToolCaller,
  Effect.gen(function*() {
    const transport = yield* McpTransport
    const { address } = yield* HttpServer.HttpServer
    if (address._tag === "UnixAddress") return yield* Effect.dieMessage("The MCP tools call the API over TCP: listen on HOST and PORT")
    const baseUrl = loopbackUrl(address)
    const httpClient = yield* HttpClient.HttpClient
    return ToolCaller.of({
      client: Effect.gen(function*() {
        const { clientId } = yield* McpSchema.McpServerClient
        const token = yield* transport.tokenOf(clientId).pipe(
          Effect.orElseFail(() =>
            new ToolError({ _tag: "Unauthorized", message: "This MCP request carried no bearer token" })
          )
        )
        return yield* makeClient({ baseUrl, token }).pipe(Effect.provideService(HttpClient.HttpClient, httpClient))
      })
    })
  })
).pipe(Layer.provide(FetchHttpClient.layer))
