import { HttpApi, HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"

/**
 * `/docs`, Scalar's reference page. Its 3 MB script is loaded with the first request for it, not at
 * startup: parsing it and building the page cost every start about 0.3 s and 10 MB (issue 14).
 */
export const DocsLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const api = yield* HttpApi.Api
    const page = yield* Effect.cached(
      Effect.flatMap(Effect.promise(() => import("./DocsPage.js")), (module) => module.makeDocsPage(api))
    )
    yield* router.get("/docs", Effect.flatten(page))
  }))
