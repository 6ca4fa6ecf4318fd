import { NodeSdk } from "@effect/opentelemetry"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base"

/** Spans of each request and each SQL statement, handed to `spanProcessor`, as service `postline`. */
export const layerTracing = (spanProcessor: SpanProcessor) =>
  NodeSdk.layer(() => ({ resource: { serviceName: "postline" }, spanProcessor }))

/** Spans exported in batches over OTLP/HTTP to the collector at `endpoint`. */
export const layerOtlp = (endpoint: URL) =>
  layerTracing(new BatchSpanProcessor(new OTLPTraceExporter({ url: new URL("v1/traces", endpoint).href })))
