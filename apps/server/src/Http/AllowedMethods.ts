import { HttpApiBuilder, type HttpRouter } from "@effect/platform"
import { Chunk, Effect } from "effect"

interface RoutePath {
  readonly method: string
  readonly matches: (path: string) => boolean
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * A route's path as the router matches it (find-my-way's defaults, as @effect/platform sets them): `:name` is one
 * segment, `*` the rest; static segments without regard to case; repeated and trailing slashes ignored.
 */
const routePath = (route: HttpRouter.Route<unknown, unknown>): RoutePath => {
  const segments = route.path.split("/").map((segment) =>
    segment.startsWith(":") ? "[^/]+" : segment === "*" ? ".*" : escaped(segment)
  )
  const shape = new RegExp(`^${segments.join("/")}$`, "i")
  return { method: route.method, matches: (path) => shape.test(path) }
}

const normalized = (path: string) => path.replace(/\/{2,}/g, "/").replace(/(.)\/$/, "$1")

/**
 * The methods that the application's router (the HttpApi's endpoints and the routes added beside them: `/docs`,
 * `/mcp`, ...) serves at a path, for the `Allow` header of a 405 (RFC 9110 §15.5.6). Read from the router the first
 * time it is asked, when every route is in it.
 */
export const makeAllowedMethods = Effect.gen(function*() {
  const router = yield* HttpApiBuilder.Router
  const routes = yield* Effect.cached(
    Effect.map(router.router, (built) => Chunk.toReadonlyArray(built.routes).map(routePath))
  )
  return (path: string): Effect.Effect<ReadonlyArray<string>> =>
    Effect.map(routes, (all) => {
      const target = normalized(path)
      const methods = new Set(all.filter((route) => route.method !== "*" && route.matches(target)).map((route) => route.method))
      return [...methods].sort()
    })
})
