import type { SqlError } from "@effect/sql"

/** PostgreSQL's unique_violation, as node-postgres reports it. */
export const isUniqueViolation = (error: SqlError.SqlError): boolean =>
  (error.cause as { readonly code?: unknown } | undefined)?.code === "23505"
