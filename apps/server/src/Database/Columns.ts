import type { Statement } from "@effect/sql"

/** A timestamptz column as the contract's timestamps: ISO 8601 in UTC, milliseconds, `Z`. */
export const isoUtc = (qualifiedColumn: string) =>
  `to_char(${qualifiedColumn} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/**
 * A SELECT list that names every result column after its field, `expression AS "field"`: rows come
 * out of the driver in their JSON form, with no renaming pass over each row. Every field of `A`
 * needs an expression, so a field cannot be left out. Runs of plain expressions are joined into one
 * literal once, here, rather than on every statement.
 */
export const selectFields = <A>(
  sql: Statement.Constructor,
  fields: { readonly [K in keyof A]-?: string | Statement.Fragment }
): Statement.Fragment => {
  const parts: Array<Statement.Fragment> = []
  let run: Array<string> = []
  const endRun = () => {
    if (run.length > 0) parts.push(sql.literal(run.join(", ")))
    run = []
  }
  for (const [field, expression] of Object.entries<string | Statement.Fragment>(fields)) {
    if (typeof expression === "string") {
      run.push(`${expression} AS "${field}"`)
    } else {
      endRun()
      parts.push(sql`${expression} AS ${sql.literal(`"${field}"`)}`)
    }
  }
  endRun()
  return sql.csv(parts)
}
