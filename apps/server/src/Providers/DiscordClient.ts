import { discordWebhookUrlPattern, type ProviderErrorCategory } from "@postline/domain"
import { Effect, Option, Redacted, Schema } from "effect"
import { Outbound } from "../Outbound/Outbound.js"
import type { CredentialsOf } from "./Credentials.js"
import { DiscordSettings } from "./DiscordSettings.js"
import { decodeAnswer, fromOutbound, fromStatus, shortMessage } from "./Errors.js"
import { ProviderError } from "./SocialProvider.js"

// Discord's error answers (docs/topics/opcodes-and-status-codes#json, docs/reference#error-messages): a JSON `code`
// and `message`, and for a refused form an `errors` tree whose `_errors` say what was wrong where; a 429 answers
// `retry_after` in seconds, a float (docs/topics/rate-limits#exceeding-a-rate-limit).
const ErrorBody = Schema.Struct({
  code: Schema.optional(Schema.Number),
  message: Schema.optional(Schema.String),
  errors: Schema.optional(Schema.Unknown),
  retry_after: Schema.optional(Schema.Number)
})
const decodeErrorBody = Schema.decodeUnknownOption(Schema.parseJson(ErrorBody))

/** Discord's JSON error codes that Postline tells apart. */
export const discordCodes = { unknownWebhook: 10015, unknownMessage: 10008 } as const

/** Each `_errors` entry of a refused form, named by where it is (`content: Must be 2000 or fewer in length.`). */
const formErrors = (tree: unknown, path: ReadonlyArray<string> = []): ReadonlyArray<string> => {
  if (typeof tree !== "object" || tree === null) return []
  return Object.entries(tree).flatMap(([key, value]) =>
    key === "_errors" && Array.isArray(value)
      ? value.map((error: { message?: unknown }) => `${path.length > 0 ? `${path.join(".")}: ` : ""}${String(error?.message)}`)
      : formErrors(value, [...path, key])
  )
}

/**
 * Seconds to wait, as Discord says: the body's `retry_after` (a float, rounded up) is the most precise, then the
 * `Retry-After` header, then `X-RateLimit-Reset-After`. Discord's `X-RateLimit-Reset` is Unix seconds with decimals,
 * which `Errors.fromStatus` must not take for another network's ISO time: only `retry-after` is answered.
 */
const discordHeaders = (headers: Headers, retryAfter: number | undefined) => (name: string) => {
  if (name !== "retry-after") return undefined
  const seconds = retryAfter ?? Number(headers.get("retry-after") ?? headers.get("x-ratelimit-reset-after") ?? Number.NaN)
  return Number.isFinite(seconds) ? String(Math.ceil(seconds)) : undefined
}

/** An error answer of Discord's, by its status and its JSON code. */
export const fromDiscordAnswer = (status: number, headers: Headers, text: string): ProviderError => {
  const body = Option.getOrUndefined(decodeErrorBody(text))
  const details = formErrors(body?.errors)
  const said = body?.message ?? shortMessage(text, `Discord answered ${status}`)
  const unknownWebhook = status === 404 && body?.code === discordCodes.unknownWebhook
  const providerMessage = unknownWebhook || status === 401
    ? `Discord does not know this webhook (${said}): it was deleted, or the URL is wrong. Copy the channel's webhook URL ` +
      "again (Server Settings → Integrations → Webhooks) and connect it"
    : details.length > 0
    ? `${said}: ${details.join("; ")}`
    : said
  // A deleted webhook never comes back: the channel must be connected again with a new one.
  const category: ProviderErrorCategory | undefined = unknownWebhook ? "auth" : undefined
  return fromStatus({
    provider: "discord",
    status,
    header: discordHeaders(headers, body?.retry_after),
    providerMessage,
    clientError: status === 400 || status === 413 ? "invalid_content" : "unknown",
    ...(category ? { category } : {})
  })
}

/** The webhook a URL names: its id, and its token, the secret in it. */
export interface DiscordWebhook {
  readonly id: string
  readonly token: Redacted.Redacted<string>
}

/** The id and token of the URL the user pasted, which the credentials' schema has checked. */
export const webhookOf = (credentials: CredentialsOf<"discord">): DiscordWebhook => {
  const [, id, token] = discordWebhookUrlPattern.exec(Redacted.value(credentials.webhookUrl))!
  return { id: id!, token: Redacted.make(token!) }
}

export interface DiscordRequest {
  readonly method?: "GET" | "POST" | "DELETE"
  /** After the webhook's token: `""`, `/messages/<id>`; a query included. */
  readonly path?: string
  /** Names the call in messages: the URL holds the token, and is never shown. */
  readonly name: string
  /** Sent as JSON. */
  readonly json?: unknown
  /** Sent as multipart/form-data (a message with files). */
  readonly form?: FormData
}

/**
 * Calls of a webhook at `DISCORD_API_URL` (`/webhooks/<id>/<token>…`: the token authenticates, no header), through
 * the guarded outbound client, their failures made provider errors.
 */
export class DiscordClient extends Effect.Service<DiscordClient>()("DiscordClient", {
  effect: Effect.gen(function*() {
    const outbound = yield* Outbound
    const { apiUrl } = yield* DiscordSettings

    const call = <A, I>(webhook: DiscordWebhook, request: DiscordRequest, schema: Schema.Schema<A, I>) =>
      Effect.gen(function*() {
        const url = `${apiUrl}/webhooks/${webhook.id}/${Redacted.value(webhook.token)}${request.path ?? ""}`
        const response = yield* outbound.request(url, {
          method: request.method ?? "GET",
          headers: {
            accept: "application/json",
            ...(request.json !== undefined ? { "content-type": "application/json" } : {})
          },
          ...(request.json !== undefined ? { body: JSON.stringify(request.json) } : request.form ? { body: request.form } : {})
        }).pipe(Effect.mapError((error) => fromOutbound("discord", error)))
        const text = new TextDecoder().decode(response.body)
        if (response.status < 200 || response.status > 299) return yield* fromDiscordAnswer(response.status, response.headers, text)
        // A deletion answers 204, nothing.
        return yield* decodeAnswer("discord", request.name, response.status, text, schema)
      })

    return { call } as const
  }),
  dependencies: [DiscordSettings.Default]
}) {}
