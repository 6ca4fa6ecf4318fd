import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { BadRequestReason, ConflictReason, PaymentRequiredReason } from "./ErrorReasons.js"
import { optional } from "./Fields.js"

/**
 * The error bodies of the API: every error is `{ _tag, message }`
 * with its own status. The built-in HttpApiError classes send empty
 * bodies, so the API declares its own. A 409 `Conflict`, 402 and 400
 * `BadRequest` may add `reason`, a stable code (ErrorReasons.ts).
 */

export class DecodeIssue extends Schema.Class<DecodeIssue>("DecodeIssue")({
  path: Schema.Array(Schema.String),
  message: Schema.String
}, { description: "One way in which the request did not match its schema" }) {}

export class HttpApiDecodeError extends Schema.TaggedError<HttpApiDecodeError>("DecodeError")(
  "HttpApiDecodeError",
  { message: Schema.String, issues: Schema.Array(DecodeIssue) },
  HttpApiSchema.annotations({ status: 400, description: "The request did not match the expected schema" })
) {}

export class BadRequest extends Schema.TaggedError<BadRequest>()(
  "BadRequest",
  { message: Schema.String, reason: optional(BadRequestReason) },
  HttpApiSchema.annotations({ status: 400, description: "The request could not be understood; `reason`, when given, says why (BadRequestReason)" })
) {}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()(
  "Unauthorized",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 401, description: "Missing or invalid bearer credentials" })
) {}

export class PaymentRequired extends Schema.TaggedError<PaymentRequired>()(
  "PaymentRequired",
  { message: Schema.String, reason: optional(PaymentRequiredReason) },
  HttpApiSchema.annotations({ status: 402, description: "The organization cannot pay for it; `reason` says why (PaymentRequiredReason)" })
) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()(
  "Forbidden",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 403, description: "The caller's role does not allow this" })
) {}

export class NotFound extends Schema.TaggedError<NotFound>()(
  "NotFound",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 404, description: "No such resource visible to the caller" })
) {}

export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()(
  "MethodNotAllowed",
  { message: Schema.String },
  HttpApiSchema.annotations({
    status: 405,
    description: "The path exists but not with this method; the Allow header lists the methods it has"
  })
) {}

export class Conflict extends Schema.TaggedError<Conflict>()(
  "Conflict",
  { message: Schema.String, reason: optional(ConflictReason) },
  HttpApiSchema.annotations({ status: 409, description: "The request conflicts with the current state; `reason` says how (ConflictReason)" })
) {}

export class RequestTimeout extends Schema.TaggedError<RequestTimeout>()(
  "RequestTimeout",
  { message: Schema.String },
  HttpApiSchema.annotations({
    status: 408,
    description: "The request's headers or body arrived slower than the server's timeouts; the server closes the connection"
  })
) {}

export class RequestHeaderFieldsTooLarge extends Schema.TaggedError<RequestHeaderFieldsTooLarge>()(
  "RequestHeaderFieldsTooLarge",
  { message: Schema.String },
  HttpApiSchema.annotations({
    status: 431,
    description: "The request line and headers exceed 16384 bytes; the server closes the connection"
  })
) {}

export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()(
  "TooManyRequests",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 429, description: "Rate limit exceeded" })
) {}

export class InternalError extends Schema.TaggedError<InternalError>()(
  "InternalError",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 500, description: "An unexpected server failure" })
) {}

export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()(
  "ServiceUnavailable",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 503, description: "The database does not answer" })
) {}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()(
  "PayloadTooLarge",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 413, description: "The file is larger than the server takes for its kind" })
) {}

export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()(
  "UnsupportedMediaType",
  { message: Schema.String },
  HttpApiSchema.annotations({
    status: 415,
    description: "The file's bytes are not an image or video the server takes (JPEG, PNG, WebP, GIF, HEIC, MP4), whatever its name or declared type"
  })
) {}

export class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>()(
  "QuotaExceeded",
  { message: Schema.String },
  HttpApiSchema.annotations({
    status: 409,
    description: "The organization's stored media would exceed its storage quota: delete assets to make room"
  })
) {}

export class BillingDisabled extends Schema.TaggedError<BillingDisabled>()(
  "BillingDisabled",
  { message: Schema.String },
  HttpApiSchema.annotations({
    status: 409,
    description: "This server has no payment provider (STRIPE_SECRET_KEY is not set): an operator grants credits"
  })
) {}
