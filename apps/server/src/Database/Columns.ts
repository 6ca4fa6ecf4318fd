import type { Statement } from "@effect/sql"

/** A timestamptz column as the contract's timestamps: ISO 8601 in UTC, milliseconds, `Z`. */
export const isoUtc = (sql: Statement.Constructor, qualifiedColumn: string) =>
  sql.literal(`to_char(${qualifiedColumn} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`)
