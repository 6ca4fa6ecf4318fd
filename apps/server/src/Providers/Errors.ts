import type { OutboundError } from "../Outbound/OutboundError.js"
import { retryAfterSeconds } from "../Outbound/RetryAfter.js"
import type { ProviderName } from "./Credentials.js"
import type { ProviderErrorCategory } from "@postline/domain"
import { Effect, Schema } from "effect"
import { ProviderError } from "./SocialProvider.js"

const retryable = (category: ProviderErrorCategory) => category === "rate_limited" || category === "transient"

/** No answer: timeouts and network failures may pass; a refused address or a redirect will not. */
export const fromOutbound = (provider: ProviderName, error: OutboundError): ProviderError => {
  const category = error.reason === "timeout" || error.reason === "network" ? "transient" : "unknown"
  return new ProviderError({ provider, category, retryable: retryable(category), providerMessage: error.message })
}

/** An error answer, by its status; `clientError` is what other 4xx statuses mean for this provider. */
export const fromStatus = (options: {
  readonly provider: ProviderName
  readonly status: number
  readonly header: (name: string) => string | null | undefined
  readonly providerMessage: string
  readonly clientError: ProviderErrorCategory
  /** Overrides what the status says, for a provider whose error names are more precise. */
  readonly category?: ProviderErrorCategory
}): ProviderError => {
  const { status } = options
  const category: ProviderErrorCategory = options.category ?? (status === 401 || status === 403
    ? "auth"
    : status === 429
    ? "rate_limited"
    : status === 408 || status >= 500
    ? "transient"
    : status >= 400
    ? options.clientError
    : "unknown")
  const retryAfter = category === "rate_limited" ? retryAfterSeconds(options.header, new Date()) : undefined
  return new ProviderError({
    provider: options.provider,
    category,
    retryable: retryable(category),
    ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}),
    providerStatus: status,
    providerMessage: options.providerMessage
  })
}

/** A provider's own words, cut short: an error page can be long. */
export const shortMessage = (text: string, fallback: string): string => {
  const trimmed = text.trim()
  return trimmed === "" ? fallback : trimmed.length > 300 ? `${trimmed.slice(0, 300)}…` : trimmed
}

/** A 2xx answer read as `schema` (an empty one as null); anything else is `unknown`, naming the call and what came. */
export const decodeAnswer = <A, I>(provider: ProviderName, call: string, status: number, text: string, schema: Schema.Schema<A, I>) =>
  Schema.decodeUnknown(Schema.parseJson(schema))(text === "" ? "null" : text).pipe(
    Effect.mapError(() =>
      new ProviderError({
        provider,
        category: "unknown",
        retryable: false,
        providerStatus: status,
        providerMessage: `Unexpected answer to ${call}: ${shortMessage(text, "(empty)")}`
      })
    )
  )
