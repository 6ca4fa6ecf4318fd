import type { ProviderErrorCategory } from "@postline/domain"
import { Effect, Option, Redacted, Schema } from "effect"
import { Outbound } from "../Outbound/Outbound.js"
import { decodeAnswer, fromOutbound, fromStatus, shortMessage } from "./Errors.js"
import { ProviderError } from "./SocialProvider.js"
import { XSettings } from "./XSettings.js"

// X's error answers (docs.x.com/x-api/fundamentals/response-codes-and-errors): a problem (RFC 7807) with
// `title`, `detail`, `type`, `status`, sometimes an `errors` list instead or besides; the token endpoints
// answer OAuth's `error` and `error_description`.
const ErrorBody = Schema.Struct({
  title: Schema.optional(Schema.String),
  detail: Schema.optional(Schema.String),
  type: Schema.optional(Schema.String),
  errors: Schema.optional(Schema.Array(Schema.Struct({
    message: Schema.optional(Schema.String),
    detail: Schema.optional(Schema.String)
  }))),
  error: Schema.optional(Schema.String),
  error_description: Schema.optional(Schema.String)
})
const decodeErrorBody = Schema.decodeUnknownOption(Schema.parseJson(ErrorBody))

/**
 * The headers as `Errors.fromStatus` reads them: X says when its window resets in `x-rate-limit-reset`, a Unix
 * time in seconds, which is what `RateLimit-Reset` holds in its Unix form.
 */
export const xHeaders = (headers: Headers) => (name: string) =>
  name === "ratelimit-reset" ? headers.get("x-rate-limit-reset") : headers.get(name)

// X refuses a post it will never take with a 403: a duplicate of a recent one, a text too long, a reply or a text
// its rules forbid.
const contentRefusal = /duplicate content|not permitted|not allowed to create|text is too long/i

/** An error answer of X's, by its status and its words. */
export const fromXAnswer = (status: number, headers: Headers, text: string): ProviderError => {
  const body = Option.getOrUndefined(decodeErrorBody(text))
  const listed = body?.errors?.map((error) => error.detail ?? error.message).filter((words) => words !== undefined)
  // The list says what was wrong where there is one; `detail` is then X's generic sentence.
  const providerMessage = (listed && listed.length > 0 ? listed.join("; ") : undefined) ?? body?.detail ??
    body?.error_description ?? body?.title ?? body?.error ?? shortMessage(text, `X answered ${status}`)
  const category: ProviderErrorCategory | undefined = status === 403 && contentRefusal.test(providerMessage)
    ? "invalid_content"
    // The app's own access (its project, its plan), not the account's: reconnecting would not help.
    : status === 403 && body?.type?.endsWith("/client-forbidden")
    ? "unknown"
    : undefined
  return fromStatus({
    provider: "x",
    status,
    header: xHeaders(headers),
    providerMessage,
    clientError: status === 400 || status === 413 || status === 422 ? "invalid_content" : "unknown",
    ...(category ? { category } : {})
  })
}

export interface XRequest {
  readonly method?: "GET" | "POST" | "DELETE"
  /** Sent as JSON. */
  readonly json?: unknown
  /** Sent as multipart/form-data (a chunk of a medium). */
  readonly form?: FormData
}

/** Calls of X's API v2 with an account's access token, through the guarded outbound client, its failures made provider errors. */
export class XClient extends Effect.Service<XClient>()("XClient", {
  effect: Effect.gen(function*() {
    const outbound = yield* Outbound
    const { apiUrl } = yield* XSettings

    const call = <A, I>(accessToken: Redacted.Redacted<string>, path: string, schema: Schema.Schema<A, I>, request: XRequest = {}) =>
      Effect.gen(function*() {
        const response = yield* outbound.request(`${apiUrl}${path}`, {
          method: request.method ?? "GET",
          headers: {
            accept: "application/json",
            authorization: `Bearer ${Redacted.value(accessToken)}`,
            ...(request.json !== undefined ? { "content-type": "application/json" } : {})
          },
          ...(request.json !== undefined ? { body: JSON.stringify(request.json) } : request.form ? { body: request.form } : {})
        }).pipe(Effect.mapError((error) => fromOutbound("x", error)))
        const text = new TextDecoder().decode(response.body)
        if (response.status < 200 || response.status > 299) return yield* fromXAnswer(response.status, response.headers, text)
        // An APPEND may answer nothing.
        return yield* decodeAnswer("x", path.split("?")[0]!, response.status, text, schema)
      })

    return { call } as const
  })
}) {}
