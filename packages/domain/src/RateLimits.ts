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

/**
 * For an endpoint that no rate limit counts (an OpenAPI Transform): an API added to another brings the errors
 * of its middlewares to every operation of the other, 429 included, which this takes off the operation.
 */
export const notRateLimited = (operation: Record<string, unknown>): Record<string, unknown> => {
  const { 429: _, ...responses } = operation.responses as Record<string, unknown>
  return { ...operation, responses }
}

/**
 * Counts each signed transfer of bytes (an asset's download, a presigned upload's PUT) against its client
 * address's own limit: apart from the device login's, so that a page of thumbnails does not lock a login out.
 */
export class TransferRateLimit extends HttpApiMiddleware.Tag<TransferRateLimit>()("TransferRateLimit", {
  failure: TooManyRequests
}) {}
