import { HttpApiBuilder, HttpRouter, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { codeShape } from "./Detection.js"
import { linkNotFound, Links } from "./Service.js"

const json = (status: number, body: { readonly _tag: string; readonly message: string }) =>
  HttpServerResponse.unsafeJson(body, { status })

/**
 * `GET /l/{code}`: redirects (302) to the link as written and counts the
 * click; an unknown code gives 404. A plain route beside the API: no
 * authentication (whoever reads the post follows its links), and not in the
 * OpenAPI document. The answer is not to be cached, so that every click counts.
 */
export const LinkRedirectLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const links = yield* Links
    const follow = Effect.gen(function*() {
      const { code = "" } = yield* HttpRouter.params
      // Anything but a code of ours is not looked up.
      const url = codeShape.test(code) ? yield* links.follow(code) : Option.none()
      return Option.match(url, {
        onNone: () => json(404, { _tag: linkNotFound._tag, message: linkNotFound.message }),
        // The link as written may hold characters a header cannot: the URL parser's form escapes them.
        onSome: (url) => HttpServerResponse.redirect(new URL(url).href, { status: 302, headers: { "cache-control": "no-store" } })
      })
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.as(
          Effect.logError("Following a link failed", cause),
          json(500, { _tag: "InternalError", message: "Internal server error" })
        )
      )
    )
    yield* router.get("/l/:code", follow)
  })
).pipe(Layer.provide(Links.Default))
