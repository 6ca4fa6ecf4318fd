import { HttpApiMiddleware } from "@effect/platform"
import { TooManyRequests } from "./Errors.js"

/**
 * Counts each request against its caller's limit (per token or API key), after authentication and before the
 * body is read. Over the limit: 429 with `Retry-After`.
 */
export class CallerRateLimit extends HttpApiMiddleware.Tag<CallerRateLimit>()("CallerRateLimit", {
  failure: TooManyRequests
}) {}

/** Counts each request of an endpoint without authentication against its client address's limit. */
export class AddressRateLimit extends HttpApiMiddleware.Tag<AddressRateLimit>()("AddressRateLimit", {
  failure: TooManyRequests
}) {}
