import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { PostlineApi } from "./Api.js"

/**
 * A typed client derived from the API definition.
 * Needs an `HttpClient` (for example `FetchHttpClient.layer`).
 */
export const makeClient = (options: { readonly baseUrl?: string; readonly token: string }) =>
  HttpApiClient.make(PostlineApi, {
    baseUrl: options.baseUrl,
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(options.token))
  })
