import { Schema } from "effect"

/**
 * Why an outbound call failed before a usable answer came back. Messages name the host only: the
 * rest of an address a user gave (a webhook's path or query) may hold a secret.
 */
export class OutboundError extends Schema.TaggedError<OutboundError>()("OutboundError", {
  reason: Schema.Literal("invalid_url", "refused_address", "timeout", "network", "redirect", "too_large"),
  message: Schema.String
}) {}
