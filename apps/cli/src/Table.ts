/**
 * Aligned text for people: tables of rows and lists of labelled fields. Widths count code points, so
 * accented letters align; wide characters (CJK, emoji) may not.
 */

export interface Column<Row> {
  readonly header: string
  readonly value: (row: Row) => string
}

const width = (text: string) => [...text].length

const padEnd = (text: string, to: number) => text + " ".repeat(Math.max(0, to - width(text)))

/** One line per cell, without the line breaks a post's text may hold. */
const oneLine = (text: string) => text.replace(/\s*[\r\n]+\s*/g, " ")

/** Column headers in capitals, each column as wide as its widest cell, two spaces apart; "(none)" for no rows. */
export const table = <Row>(columns: ReadonlyArray<Column<Row>>, rows: ReadonlyArray<Row>): string => {
  if (rows.length === 0) return "(none)"
  const cells = [
    columns.map((column) => column.header.toUpperCase()),
    ...rows.map((row) => columns.map((column) => oneLine(column.value(row))))
  ]
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => width(line[i]!))))
  return cells
    .map((line) => line.map((cell, i) => (i === line.length - 1 ? cell : padEnd(cell, widths[i]!))).join("  ").trimEnd())
    .join("\n")
}

/** `label:  value` lines, values aligned. */
export const fields = (pairs: ReadonlyArray<readonly [label: string, value: string]>): string => {
  const labelWidth = Math.max(0, ...pairs.map(([label]) => width(label) + 1))
  return pairs.map(([label, value]) => `${padEnd(`${label}:`, labelWidth)}  ${value}`).join("\n")
}

/** A post's text cut to `max` characters for a table cell. */
export const excerpt = (text: string, max = 40) => {
  const line = oneLine(text)
  return width(line) <= max ? line : `${[...line].slice(0, max - 1).join("")}…`
}

/** A missing value in a cell. */
export const orDash = (value: string | number | null | undefined) => (value === null || value === undefined ? "-" : String(value))
