import { describe, expect, it, layer } from "@effect/vitest"
import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { PostlineApi, RequestHeaderFieldsTooLarge } from "@postline/domain"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { maxHeaderBytes } from "../src/Http/ClientErrors.js"
import { serverTimeouts } from "../src/Http/ServerTimeouts.js"
import { renderOpenApi } from "../scripts/openapi.js"
import { document, isValid } from "./support/OpenApiDocument.js"
import { head, sendRaw } from "./support/RawSocket.js"
import { type ServerProcess, startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"

// Short enough to run, long enough that a loaded machine does not trip them on a prompt request.
const timeouts = { HTTP_HEADERS_TIMEOUT_MS: "1000", HTTP_REQUEST_TIMEOUT_MS: "2000", HTTP_KEEP_ALIVE_TIMEOUT_MS: "500" }

class EdgeServer extends Context.Tag("EdgeServer")<EdgeServer, ServerProcess & { readonly port: number }>() {}

/** One server process for the file, with the short timeouts. */
const EdgeServerLive = Layer.scoped(
  EdgeServer,
  Effect.gen(function*() {
    const server = yield* startServer({ ...(yield* freshDatabaseEnv), ...timeouts })
    return { ...server, port: Number(new URL(server.base).port) }
  })
)

/** A head of exactly `bytes` bytes, padded in one header. */
const headOf = (bytes: number, ...headers: ReadonlyArray<string>) => {
  const unpadded = head("GET /health HTTP/1.1", ...headers, "X-Pad: ")
  return unpadded.replace("X-Pad: ", `X-Pad: ${"a".repeat(bytes - unpadded.length)}`)
}

const form = "Content-Type: application/x-www-form-urlencoded"

/** Slow clients, half stuck in their headers, half in their body. */
const slowClients = 200
const slowParts = (i: number) =>
  i % 2 === 0
    ? ["POST /v1/auth/token HTTP/1.1\r\nHost: localhost\r\n"]
    : [head("POST /v1/auth/token HTTP/1.1", form, "Content-Length: 1000") + "grant_type="]

const documentedOperations = Object.values(document.paths as Record<string, Record<string, any>>).flatMap(Object.values)

/** Requests Node's parser refuses, which it answered with an empty body. */
const refusedByTheParser: ReadonlyArray<readonly [string, ReadonlyArray<string | Buffer>, number, string]> = [
  ["a raw non-ASCII byte in the path", [Buffer.concat([
    Buffer.from("GET /v1/organizations/caf"),
    Buffer.of(0xe9),
    Buffer.from(" HTTP/1.1\r\nHost: localhost\r\n\r\n")
  ])], 400, "BadRequest"],
  ["a NUL in a header value", [head("GET /health HTTP/1.1", "X-Note: a\0b")], 400, "BadRequest"],
  ["a malformed chunk size", [head("POST /v1/auth/token HTTP/1.1", form, "Transfer-Encoding: chunked") + "ZZ\r\nabc\r\n0\r\n\r\n"], 400, "BadRequest"],
  ["a chunk longer than its size", [head("POST /v1/auth/token HTTP/1.1", form, "Transfer-Encoding: chunked") + "2\r\nabcdef\r\n0\r\n\r\n"], 400, "BadRequest"],
  ["a request line over the limit", [head(`GET /health?q=${"a".repeat(maxHeaderBytes)} HTTP/1.1`)], 431, "RequestHeaderFieldsTooLarge"],
  ["a header block over the limit", [headOf(maxHeaderBytes + 1024)], 431, "RequestHeaderFieldsTooLarge"],
  ["headers arriving slower than the headers timeout", ["GET /health HTTP/1.1\r\nHost: localhost\r\n"], 408, "RequestTimeout"],
  ["a body shorter than its Content-Length", [head("POST /v1/auth/token HTTP/1.1", form, "Content-Length: 100") + "grant_type="], 408, "RequestTimeout"]
]

layer(EdgeServerLive, { excludeTestServices: true })("the edge of the server process", (it) => {
  it.effect("answers what Node's parser refuses with { _tag, message } and closes cleanly", () =>
    Effect.gen(function*() {
      const server = yield* EdgeServer
      const port = server.port
      const answers = yield* Effect.promise(() => Promise.all(refusedByTheParser.map(([, parts]) => sendRaw(port, parts))))
      answers.forEach((answer, index) => {
        const [name, , status, tag] = refusedByTheParser[index]!
        expect({ name, status: answer.status }).toEqual({ name, status })
        expect(answer.body, name).toEqual({ _tag: tag, message: expect.any(String) })
        expect(answer.headers.connection, name).toBe("close")
        expect({ name, closed: answer.closed, error: answer.error }).toEqual({ name, closed: true, error: undefined })
      })
      expect(answers[5]!.body.message).toBe(`The request line and headers must not exceed ${maxHeaderBytes} bytes`)
      // Any request may get these answers, so every operation of the document declares each of them.
      for (const answer of answers) {
        for (const operation of documentedOperations) {
          const declared = operation.responses[String(answer.status)]?.content?.["application/json"]?.schema
          expect(declared, `${operation.operationId} ${answer.status}`).toBeDefined()
          expect(isValid(declared, answer.body), `${operation.operationId}: ${JSON.stringify(answer.body)}`).toBe(true)
        }
      }
      // At the bound, a head is read as usual (and the connection closed after the answer, as asked: no wait).
      const atTheBound = yield* Effect.promise(() => sendRaw(port, [headOf(maxHeaderBytes, "Connection: close")], 30_000))
      expect(atTheBound.status).toBe(200)
      expect(server.child.exitCode).toBeNull()
    }))

  it.effect("the typed client reads a 431 as the API's RequestHeaderFieldsTooLarge", () =>
    Effect.gen(function*() {
      const server = yield* EdgeServer
      const client = yield* HttpApiClient.make(PostlineApi, {
        baseUrl: server.base,
        transformClient: HttpClient.mapRequest(HttpClientRequest.setHeader("x-pad", "a".repeat(maxHeaderBytes)))
      })
      const refused = yield* Effect.flip(client.health.health())
      expect(refused).toBeInstanceOf(RequestHeaderFieldsTooLarge)
      expect(refused).toMatchObject({ message: `The request line and headers must not exceed ${maxHeaderBytes} bytes` })
    }).pipe(Effect.provide(FetchHttpClient.layer)))

  it.effect("answers a prompt request while slow clients hold their connections", () =>
    Effect.scoped(Effect.gen(function*() {
      // Timeouts far longer than the test, so that "beside them" is an order of events, not a race with the clock.
      const long = { HTTP_HEADERS_TIMEOUT_MS: "600000", HTTP_REQUEST_TIMEOUT_MS: "600000" }
      const server = yield* startServer({ ...(yield* freshDatabaseEnv), ...long })
      const port = Number(new URL(server.base).port)
      let slowAnswered = 0
      Array.from({ length: slowClients }, (_, i) => sendRaw(port, slowParts(i), 600_000).then(() => slowAnswered++))
      yield* Effect.sleep("200 millis")
      const prompt = yield* Effect.promise(() => fetch(`${server.base}/health`))
      expect(prompt.status).toBe(200)
      expect(slowAnswered).toBe(0)
    })))

  it.effect("drops slow clients by its timeouts", () =>
    Effect.gen(function*() {
      const server = yield* EdgeServer
      const port = server.port
      const dropped = yield* Effect.promise(() =>
        Promise.all(Array.from({ length: slowClients }, (_, i) => sendRaw(port, slowParts(i)))))
      for (const answer of dropped) {
        expect(answer.closed).toBe(true)
        expect(answer.body).toEqual({ _tag: "RequestTimeout", message: "The request did not arrive in time" })
      }
      // A request answered before its body arrived (401 here) is dropped at the request timeout, not answered twice.
      const answeredEarly = yield* Effect.promise(() =>
        sendRaw(port, [head("POST /v1/organizations HTTP/1.1", "Content-Type: application/json", "Content-Length: 100") + "{"]))
      expect(answeredEarly.status).toBe(401)
      expect(answeredEarly.body).toEqual({ _tag: "Unauthorized", message: expect.any(String) })
      expect(answeredEarly.closed).toBe(true)
      // A kept-alive connection left idle is closed by the server, which announced its keep-alive timeout (0.5 s,
      // whole seconds in the header) rather than Node's default of 5 s.
      const idle = yield* Effect.promise(() => sendRaw(port, [head("GET /health HTTP/1.1")]))
      expect(idle.status).toBe(200)
      expect(idle.headers["keep-alive"]).toBe("timeout=0")
      expect(idle.closed).toBe(true)
    }))
})

describe("the OpenAPI document", () => {
  it("declares the answers any request may get from the parser", () => {
    const { description } = JSON.parse(renderOpenApi()).info
    expect(description).toContain("408 `RequestTimeout`")
    expect(description).toContain(`431 \`RequestHeaderFieldsTooLarge\` (its request line and headers exceed ${maxHeaderBytes} bytes)`)
  })
})

describe("the server timeouts", () => {
  const read = (settings: Record<string, string>) =>
    Effect.runSyncExit(Effect.withConfigProvider(serverTimeouts, ConfigProvider.fromJson(settings)))

  it("are explicit by default", () => {
    expect(read({})).toMatchObject({
      _tag: "Success",
      value: { headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000, connectionsCheckingInterval: 1_000 }
    })
    expect(read(timeouts)).toMatchObject({
      _tag: "Success",
      value: { headersTimeout: 1_000, requestTimeout: 2_000, keepAliveTimeout: 500, connectionsCheckingInterval: 250 }
    })
  })

  it.each([
    [{ HTTP_HEADERS_TIMEOUT_MS: "5000", HTTP_REQUEST_TIMEOUT_MS: "1000" }, /must not exceed HTTP_REQUEST_TIMEOUT_MS/],
    [{ HTTP_KEEP_ALIVE_TIMEOUT_MS: "0" }, /HTTP_KEEP_ALIVE_TIMEOUT_MS must be a positive number/],
    [{ HTTP_REQUEST_TIMEOUT_MS: "soon" }, /HTTP_REQUEST_TIMEOUT_MS/]
  ])("refuse %j", (settings, message) => {
    const exit = read(settings)
    expect(exit._tag).toBe("Failure")
    expect(String(exit._tag === "Failure" ? exit.cause : "")).toMatch(message)
  })
})
