import { Effect, Redacted, Schema } from "effect"
import { Outbound } from "../Outbound/Outbound.js"
import type { CredentialsOf } from "./Credentials.js"
import { fromOutbound, fromStatus, shortMessage } from "./Errors.js"
import { type ContentLimits, ProviderError, type SocialProvider } from "./SocialProvider.js"
import { lengthProblems, mastodonLength } from "./TextLength.js"

// The parts of Mastodon's answers that Postline reads (docs.joinmastodon.org/entities).
const Account = Schema.Struct({
  username: Schema.String,
  display_name: Schema.String,
  avatar: Schema.String,
  url: Schema.String
})

const Instance = Schema.Struct({
  domain: Schema.String,
  configuration: Schema.optional(Schema.Struct({
    statuses: Schema.optional(Schema.Struct({
      max_characters: Schema.optional(Schema.Int),
      characters_reserved_per_url: Schema.optional(Schema.Int)
    }))
  }))
})

const Status = Schema.Struct({
  id: Schema.String,
  uri: Schema.String,
  url: Schema.optional(Schema.NullOr(Schema.String))
})

const ErrorBody = Schema.Struct({ error: Schema.String })
const decodeErrorBody = Schema.decodeUnknownOption(Schema.parseJson(ErrorBody))

const defaultLimits: ContentLimits = { maxLength: 500, urlLength: 23 }

/**
 * Mastodon, and servers that speak its API, over plain HTTP through the guarded outbound client: three
 * documented calls do not need a client library, and this way every call is checked the same way.
 */
export class Mastodon extends Effect.Service<Mastodon>()("Mastodon", {
  effect: Effect.gen(function*() {
    const outbound = yield* Outbound

    const call = <A, I>(
      credentials: CredentialsOf<"mastodon">,
      path: string,
      schema: Schema.Schema<A, I>,
      init: { readonly method?: "GET" | "POST"; readonly headers?: Record<string, string>; readonly body?: string } = {}
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

    const provider: SocialProvider<"mastodon"> = {
      name: "mastodon",
      defaultLimits,
      verify: (credentials) =>
        Effect.gen(function*() {
          const account = yield* call(credentials, "/api/v1/accounts/verify_credentials", Account)
          // Servers older than Mastodon 4.0 have no /api/v2/instance: they had the default limits.
          const instance = yield* call(credentials, "/api/v2/instance", Instance).pipe(
            Effect.catchIf((error) => error.providerStatus === 404, () =>
              Effect.succeed({ domain: new URL(credentials.instanceUrl).hostname, configuration: undefined }))
          )
          const statuses = instance.configuration?.statuses
          return {
            handle: `@${account.username}@${instance.domain}`,
            displayName: account.display_name === "" ? null : account.display_name,
            avatarUrl: account.avatar,
            profileUrl: account.url,
            limits: {
              maxLength: statuses?.max_characters ?? defaultLimits.maxLength,
              urlLength: statuses?.characters_reserved_per_url ?? defaultLimits.urlLength
            }
          }
        }),
      // Mastodon keeps an Idempotency-Key for an hour and answers a repeated one with the status it made.
      publish: (account, post) =>
        call(account.credentials, "/api/v1/statuses", Status, {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": post.idempotencyKey },
          body: JSON.stringify({ status: post.text })
        }).pipe(Effect.map((status) => ({ externalId: status.id, url: status.url ?? status.uri }))),
      validate: (text, limits = defaultLimits) =>
        lengthProblems(text, mastodonLength(text, limits.urlLength ?? defaultLimits.urlLength!), limits)
    }
    return provider
  })
}) {}
