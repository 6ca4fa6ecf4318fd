import { HttpMiddleware } from "@effect/platform"
import { Config, Effect, Layer, Option } from "effect"
import { hasSecretQuery } from "./Http/AccessLog.js"
import { lazyModule } from "./LazyModule.js"

export const TracingSdkModule = lazyModule("./TracingSdk.js", () => import("./TracingSdk.js"), { layerOtlp: "function" })

/**
 * With `OTEL_EXPORTER_OTLP_ENDPOINT` set, `app` exports its spans there over
 * OTLP/HTTP. Unset, no span is even built: building and dropping one on every
 * request and statement cost measurable CPU per request. The OpenTelemetry SDK
 * (TracingSdk.ts) is loaded only when it is set.
 */
export const withTracing = <A, E, R>(app: Layer.Layer<A, E, R>) =>
  Layer.unwrapEffect(
    Effect.flatMap(Config.option(Config.url("OTEL_EXPORTER_OTLP_ENDPOINT")), (endpoint) =>
      Option.match(endpoint, {
        onNone: () =>
          Effect.succeed(
            app.pipe(HttpMiddleware.withTracerDisabledWhen(() => true), Layer.provide(Layer.setTracerEnabled(false)))
          ),
        // A span would record a signed URL's query, signature and all: such requests are not traced.
        onSome: (url) =>
          Effect.map(
            TracingSdkModule.load,
            (sdk) => app.pipe(HttpMiddleware.withTracerDisabledWhen(hasSecretQuery), Layer.provide(sdk.layerOtlp(url)))
          )
      }))
  )
