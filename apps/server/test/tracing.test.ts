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
      // The scheduler's own statements may finish meanwhile in traces of their own: pick this request's writes.
      const writes = spans.filter((span) =>
        span.name === "sql.execute" && /^INSERT INTO (organizations|memberships) /.test(String(span.attributes["db.query.text"]))
      )
      expect(writes).toHaveLength(2)
      for (const write of writes) expect(write.spanContext().traceId).toBe(server!.spanContext().traceId)
    }))
})
