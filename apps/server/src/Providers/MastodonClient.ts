import { Effect, Redacted, Schema } from "effect"
import { Outbound } from "../Outbound/Outbound.js"
import type { CredentialsOf } from "./Credentials.js"
import { fromOutbound, fromStatus, shortMessage } from "./Errors.js"
import { ProviderError } from "./SocialProvider.js"

const ErrorBody = Schema.Struct({ error: Schema.String })
const decodeErrorBody = Schema.decodeUnknownOption(Schema.parseJson(ErrorBody))

/** Calls of Mastodon's API through the guarded outbound client, its failures made provider errors. */
export class MastodonClient extends Effect.Service<MastodonClient>()("MastodonClient", {
  effect: Effect.gen(function*() {
    const outbound = yield* Outbound

    const call = <A, I>(
      credentials: CredentialsOf<"mastodon">,
      path: string,
      schema: Schema.Schema<A, I>,
      init: { readonly method?: "GET" | "POST" | "DELETE"; readonly headers?: Record<string, string>; readonly body?: string | FormData } = {}
    ) =>
      Effect.gen(function*() {
        const response = yield* outbound.request(new URL(path, credentials.instanceUrl).toString(), {
          ...init,
          headers: {
            accept: "application/json",
            authorization: `Bearer ${Redacted.value(credentials.accessToken)}`,
            ...init.headers
          }
        }).pipe(Effect.mapError((error) => fromOutbound("mastodon", error)))
        const text = new TextDecoder().decode(response.body)
        if (response.status < 200 || response.status > 299) {
          return yield* fromStatus({
            provider: "mastodon",
            status: response.status,
            header: (name) => response.headers.get(name),
            providerMessage: decodeErrorBody(text).pipe((body) =>
              body._tag === "Some" ? body.value.error : shortMessage(text, response.statusText)
            ),
            clientError: response.status === 400 || response.status === 413 || response.status === 422
              ? "invalid_content"
              : "unknown"
          })
        }
        return yield* Schema.decodeUnknown(Schema.parseJson(schema))(text).pipe(
          Effect.mapError(() =>
            new ProviderError({
              provider: "mastodon",
              category: "unknown",
              retryable: false,
              providerStatus: response.status,
              providerMessage: `Unexpected answer to ${path}: is ${new URL(credentials.instanceUrl).host} a Mastodon server?`
            })
          )
        )
      })

    return { call } as const
  })
}) {}
