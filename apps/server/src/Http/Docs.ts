import { HttpApi, HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { lazyModule } from "../LazyModule.js"

export const DocsPageModule = lazyModule("./DocsPage.js", () => import("./DocsPage.js"), { makeDocsPage: "function" })

/**
 * `/docs`, Scalar's reference page, built at the first request for it rather than at every start: the page
 * is Scalar's 3.4 MB script around the whole OpenAPI document, held in memory once built (issue 14).
 */
export const DocsLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const api = yield* HttpApi.Api
    const page = yield* Effect.cached(
      Effect.flatMap(DocsPageModule.load, (module) => module.makeDocsPage(api))
    )
    yield* router.get("/docs", Effect.flatten(page))
  }))
