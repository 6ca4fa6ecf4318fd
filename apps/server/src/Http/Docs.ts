import { HttpApi, HttpApiBuilder, HttpServerResponse, OpenApi } from "@effect/platform"
import { Effect } from "effect"
import { lazyModule } from "../LazyModule.js"
import { favicon, faviconPath } from "./Favicon.js"

export const DocsPageModule = lazyModule("./DocsPage.js", () => import("./DocsPage.js"), { makeDocsPage: "function" })

const rootIndex = { docs: "/docs", openapi: "/openapi.json", health: "/health" }

/**
 * `/docs`, Scalar's reference page, and `/openapi.json`, each built at the first request for it rather than at
 * every start: the page is Scalar's 3.4 MB script around the whole OpenAPI document, held in memory once built
 * (issue 14). `/` sends there.
 */
export const DocsLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const api = yield* HttpApi.Api
    const page = yield* Effect.cached(
      Effect.flatMap(DocsPageModule.load, (module) => module.makeDocsPage(api))
    )
    yield* router.get("/docs", Effect.flatten(page))
    // HttpApiBuilder.middlewareOpenApi's document, derived at its first request: deriving it is a tenth of a second
    // of every start otherwise.
    const document = yield* Effect.cached(HttpServerResponse.json(OpenApi.fromApi(api.api)).pipe(Effect.orDie))
    yield* router.get("/openapi.json", Effect.flatten(document))
    // A browser opening the server's address lands on the reference; curl sees where everything is.
    yield* router.get("/", HttpServerResponse.json(rootIndex, { status: 302, headers: { location: "/docs" } }))
    yield* router.get(faviconPath, favicon)
  }))
