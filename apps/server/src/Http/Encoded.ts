import { HttpServerResponse } from "@effect/platform"
import type { Schema } from "effect"

/**
 * Sends a value that the SQL already produced in its schema's JSON form (the
 * two differ only by brands) without the schema's encoding pass, which
 * re-checks every field of every row and cost more per request than the
 * queries' own work. `schema` ties the value to the endpoint's success type at
 * compile time; the typed client decodes every response with the full schema
 * in the tests.
 */
export const asEncoded = <A, I>(_schema: Schema.Schema<A, I>, options?: { readonly status?: number }) => (value: A) =>
  HttpServerResponse.unsafeJson(value, { status: options?.status ?? 200 })
