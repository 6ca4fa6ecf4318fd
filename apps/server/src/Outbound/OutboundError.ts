import { Schema } from "effect"

/**
 * Why an outbound call failed before a usable answer came back. Messages name the host only: the
 * rest of an address a user gave (a webhook's path or query) may hold a secret.
 */
export class OutboundError extends Schema.TaggedError<OutboundError>()("OutboundError", {
  reason: Schema.Literal("invalid_url", "refused_address", "timeout", "network", "redirect", "too_large"),
  message: Schema.String
}) {}

/** An error and its causes, outermost first (at most 10: a cycle of causes ends there). */
export const causesOf = (error: unknown): ReadonlyArray<unknown> => {
  const chain: Array<unknown> = []
  for (let current = error; current != null && chain.length < 10; current = (current as Error).cause) chain.push(current)
  return chain
}

/** The outbound failure behind an error a client library threw around it, if there is one. */
export const outboundErrorIn = (error: unknown): OutboundError | undefined =>
  causesOf(error).find((cause): cause is OutboundError => cause instanceof OutboundError)
