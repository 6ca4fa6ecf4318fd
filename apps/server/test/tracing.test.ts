import { describe, expect, it, layer } from "@effect/vitest"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer, Logger, LogLevel, Schedule } from "effect"
import { layerTracing } from "../src/TracingSdk.js"
import { makeLocalServer } from "./support/LocalServer.js"
import { startServer } from "./support/ServerProcess.js"
import { freshDatabaseEnv } from "./support/TestDatabase.js"
import { makeTestServer, signUp } from "./support/TestServer.js"

const exporter = new InMemorySpanExporter()

const TracedServer = makeTestServer(Logger.minimumLogLevel(LogLevel.Warning)).pipe(
  Layer.provide(layerTracing(new SimpleSpanProcessor(exporter)))
)

layer(TracedServer, { excludeTestServices: true })("traces", (it) => {
  it.effect("a request gives a server span with its SQL statements inside, as service postline", () =>
    Effect.gen(function*() {
      const alice = yield* signUp()
      exporter.reset()
      yield* alice.client.organizations.createOrganization({ payload: { name: "Traced" } })
      const spans = exporter.getFinishedSpans()
      const server = spans.find((span) => span.name === "http.server POST")
      expect(server?.attributes["http.route"]).toBe("/v1/organizations")
      expect(server?.resource.attributes["service.name"]).toBe("postline")
      // The scheduler's own statements may finish meanwhile in traces of their own: pick this request's writes.
      const writes = spans.filter((span) =>
        span.name === "sql.execute" && /^INSERT INTO (organizations|memberships) /.test(String(span.attributes["db.query.text"]))
      )
      expect(writes).toHaveLength(2)
      for (const write of writes) expect(write.spanContext().traceId).toBe(server!.spanContext().traceId)
    }))
})

describe("the server process with OTEL_EXPORTER_OTLP_ENDPOINT", () => {
  // The bundle loads the OpenTelemetry SDK only when tracing is configured: this runs that path.
  it.scopedLive("exports its requests' spans there over OTLP/HTTP, as service postline", () =>
    Effect.gen(function*() {
      const exports: Array<{ readonly path: string | undefined; readonly body: string }> = []
      const collector = yield* makeLocalServer((request, response) => {
        let body = ""
        request.on("data", (chunk: Buffer) => (body += chunk))
        request.on("end", () => {
          exports.push({ path: request.url, body })
          response.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
      })
      const database = yield* freshDatabaseEnv
      const server = yield* startServer({
        ...database,
        OTEL_EXPORTER_OTLP_ENDPOINT: `${collector}/`,
        OTEL_BSP_SCHEDULE_DELAY: "100"
      })
      yield* Effect.promise(() => fetch(`${server.base}/v1/organizations`))
      const exported = yield* Effect.suspend(() => {
        const found = exports.find(({ body }) => body.includes("http.server GET"))
        return found === undefined ? Effect.fail("not yet") : Effect.succeed(found)
      }).pipe(Effect.retry({ times: 100, schedule: Schedule.spaced("100 millis") }))
      expect(exported.path).toBe("/v1/traces")
      expect(JSON.parse(exported.body).resourceSpans[0].resource.attributes).toContainEqual({
        key: "service.name",
        value: { stringValue: "postline" }
      })
    }))
})
