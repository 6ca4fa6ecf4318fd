import { expect, layer } from "@effect/vitest"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer, Logger, LogLevel } from "effect"
import { layerTracing } from "../src/Tracing.js"
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
      const statements = spans.filter((span) => span.name === "sql.execute")
      expect(statements.length).toBeGreaterThan(0)
      for (const statement of statements) expect(statement.spanContext().traceId).toBe(server!.spanContext().traceId)
    }))
})
