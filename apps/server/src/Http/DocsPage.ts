import { HttpApi, HttpApiBuilder } from "@effect/platform"
import * as HttpApiScalar from "@effect/platform/HttpApiScalar"
import { Context, Effect, Layer } from "effect"

/** Scalar's page for `api`, on a router of its own: Http/Docs.ts loads this module when `/docs` is first asked for. */
export const makeDocsPage = (api: Context.Tag.Service<HttpApi.Api>) =>
  Layer.build(
    HttpApiScalar.layer({ path: "/docs" }).pipe(
      Layer.provideMerge(HttpApiBuilder.Router.Live),
      Layer.provide(Layer.succeed(HttpApi.Api, api))
    )
  ).pipe(
    Effect.flatMap((context) => Context.get(context, HttpApiBuilder.Router).router),
    Effect.scoped
  )
