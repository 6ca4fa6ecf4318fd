import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { type Effect, Redacted } from "effect"
import { PostlineApi } from "./Api.js"

/**
 * A typed client derived from the API definition, acting with `token` (an
 * access token or API key; keep it `Redacted` so that it is never logged).
 * Needs an `HttpClient` (for example `FetchHttpClient.layer`).
 */
export const makeClient = (options: { readonly baseUrl?: string; readonly token: Redacted.Redacted | string }) =>
  HttpApiClient.make(PostlineApi, {
    baseUrl: options.baseUrl,
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(options.token))
  })

/** The typed client of the whole API, as `makeClient` (or `HttpApiClient.make(PostlineApi)`) gives it. */
export type PostlineClient = Effect.Effect.Success<ReturnType<typeof makeClient>>
