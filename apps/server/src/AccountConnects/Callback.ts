import { HttpApiBuilder, HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { TooManyRequests } from "@postline/domain"
import { Effect, Layer, Schema } from "effect"
import { document, respond } from "../Http/Page.js"
import { PublicOrigin } from "../Http/PublicOrigin.js"
import { OAuthNetworks } from "../Providers/OAuthNetworks.js"
import { ClientAddress } from "../RateLimits/ClientAddress.js"
import { RequestLimits } from "../RateLimits/RequestLimits.js"
import { callbackAnswer } from "./CallbackPage.js"
import { AccountConnects } from "./Service.js"

const encodeTooManyRequests = Schema.encode(TooManyRequests)

const failurePage = respond(
  500,
  document("Something went wrong", "<h1>Something went wrong</h1>\n<p>Start connecting the account again in a moment.</p>")
)

/**
 * `GET /v1/oauth/callback/:provider`, where a network sends the person back after they approved (or denied), and the
 * documents networks read about Postline (Bluesky's client metadata). No
 * bearer: the one-time `state` names the connect. A plain route beside the API (it answers a page, not JSON), counted
 * against the address's limit as the API's other anonymous endpoints are; codes and states are never logged.
 */
export const ConnectCallbackLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const connects = yield* AccountConnects
    const limits = yield* RequestLimits
    const clientAddress = yield* ClientAddress
    const origin = yield* PublicOrigin
    const networks = yield* OAuthNetworks
    // The connect is finished in a transaction of the server's database, which a plain route is not given.
    const sql = yield* SqlClient.SqlClient

    const answer = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const counted = yield* Effect.either(limits.count("address", clientAddress.of(request)))
      if (counted._tag === "Left") {
        return HttpServerResponse.unsafeJson(yield* encodeTooManyRequests(counted.left), { status: 429 })
      }
      const { provider } = yield* HttpRouter.params
      // The query as the network sent it, on this server's address, as the redirect address it was sent to names it.
      const callbackUrl = new URL(request.url, origin.of(request))
      return callbackAnswer(yield* connects.callback(provider ?? "", callbackUrl))
    }).pipe(
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.catchAllCause((cause) => Effect.as(Effect.logError("The connect callback failed", cause), failurePage))
    )

    yield* router.get("/v1/oauth/callback/:provider", answer)
    for (const { document, path } of networks.publishedDocuments) {
      yield* router.get(path, Effect.map(document, (json) =>
        json === null
          ? HttpServerResponse.unsafeJson({ _tag: "NotFound", message: "This server signs in as a loopback client: it publishes no client metadata" }, { status: 404 })
          : HttpServerResponse.unsafeJson(json, { headers: { "cache-control": "public, max-age=600" } })))
    }
  })
).pipe(Layer.provide([AccountConnects.Default, RequestLimits.Default, ClientAddress.Default, PublicOrigin.Default]))
