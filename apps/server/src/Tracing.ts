import { HttpMiddleware } from "@effect/platform"
import { NodeSdk } from "@effect/opentelemetry"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Config, Effect, Layer, Option } from "effect"

/** Spans of each request and each SQL statement, handed to `spanProcessor`, as service `postline`. */
export const layerTracing = (spanProcessor: SpanProcessor) =>
  NodeSdk.layer(() => ({ resource: { serviceName: "postline" }, spanProcessor }))

/**
 * With `OTEL_EXPORTER_OTLP_ENDPOINT` set, `app` exports its spans there over
 * OTLP/HTTP. Unset, no span is even built: building and dropping one on every
 * request and statement cost measurable CPU per request.
 */
export const withTracing = <A, E, R>(app: Layer.Layer<A, E, R>) =>
  Layer.unwrapEffect(
    Effect.map(Config.option(Config.url("OTEL_EXPORTER_OTLP_ENDPOINT")), (endpoint) =>
      Option.match(endpoint, {
        onNone: () =>
          app.pipe(HttpMiddleware.withTracerDisabledWhen(() => true), Layer.provide(Layer.setTracerEnabled(false))),
        onSome: (url) =>
          app.pipe(Layer.provide(
            layerTracing(new BatchSpanProcessor(new OTLPTraceExporter({ url: new URL("v1/traces", url).href })))
          ))
      }))
  )
