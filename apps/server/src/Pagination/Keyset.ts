import type { SqlClient, SqlError, Statement } from "@effect/sql"
import { type AnySortField, CurrentCaller, DefaultPageSize, type ListQuery, MaxPageSize, type SortField, type SortOrder } from "@postline/domain"
import { Effect, Option } from "effect"
import { callerLabel } from "../CallerLabel.js"
import { type CursorPosition, Cursors, type CursorScope } from "./Cursor.js"

/** A validated list request: defaults applied, limit capped, cursor checked against the list and sort. */
export interface PageRequest<F extends AnySortField = SortField> {
  readonly scope: CursorScope
  readonly sortBy: F
  readonly sortOrder: SortOrder
  readonly limit: number
  readonly cursor: Option.Option<CursorPosition>
}

/** A list, as a cursor is bound to it: its resource and filters. */
export interface ListName {
  readonly resource: string
  readonly filters?: Readonly<Record<string, string>>
}

/**
 * Reads the list query of `list` for the current caller; `F` is the fields
 * that list sorts by. A cursor is accepted only by the list and the caller it
 * was issued to.
 */
export const pageRequest = <F extends AnySortField = SortField>(
  list: ListName,
  query: Omit<ListQuery, "sortBy"> & { readonly sortBy?: F | undefined }
) =>
  Effect.gen(function*() {
    const caller = yield* CurrentCaller
    const filters = Object.entries(list.filters ?? {}).map(([name, value]) => ` ${name}=${value}`).join("")
    const scope = `${list.resource}${filters} for ${callerLabel(caller)}`
    const sort = { sortBy: query.sortBy ?? ("createdAt" as F), sortOrder: query.sortOrder ?? "desc" } as const
    const limit = Math.min(query.limit ?? DefaultPageSize, MaxPageSize)
    const cursor = query.cursor === undefined
      ? Option.none()
      : Option.some(yield* (yield* Cursors).decode(scope, query.cursor, sort))
    return { scope, ...sort, limit, cursor } satisfies PageRequest<F>
  })

export interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly total: number
  readonly nextCursor: string | null
  readonly prevCursor: string | null
}

/** The columns, qualified, that hold each sort key `F` and the tie-breaking id. */
export type SortColumns<F extends AnySortField = SortField> = Record<F | "id", string>

/** The sort columns of a table aliased `alias` with the usual column names. */
export const sortColumnsOf = (alias: string): SortColumns => ({
  createdAt: `${alias}.created_at`,
  updatedAt: `${alias}.updated_at`,
  name: `${alias}.name`,
  id: `${alias}.id`
})

/** Where the sort key of an item is: its field of the same name, unless it has none (then say where). */
type SortValueOf<A, F extends AnySortField> = A extends Record<F, string>
  ? { readonly sortValueOf?: (item: A, field: F) => string }
  : { readonly sortValueOf: (item: A, field: F) => string }

interface PageMeta {
  readonly total: number
  readonly otherSide: boolean
}

/** The columns a page's rows carry besides the item's own fields (never a field name: fields are camelCase). */
interface WithPageMeta {
  readonly _total: number
  readonly _otherSide: boolean
}

const itemOf = <A>({ _otherSide, _total, ...item }: A & WithPageMeta): A => item as A

/**
 * Keyset pagination over `(sort column, id)`: with an index on them, every
 * page, the thousandth as the first, is one index range scan. Sorting and
 * comparing always use the same column pair, so the order is total and pages
 * never overlap or skip.
 *
 * A page is one statement: its rows (one more than asked, to learn whether
 * more follow), each with the list's total and whether anything lies on the
 * cursor's other side, as two uncorrelated subqueries that PostgreSQL runs
 * once per statement. Only an empty page asks for those two again on their own.
 */
export const paginate = <A extends object, F extends AnySortField = SortField>(options: {
  readonly sql: SqlClient.SqlClient
  readonly request: PageRequest<F>
  readonly columns: SortColumns<F>
  /** The item's tie-breaking id, the value of `columns.id`. */
  readonly idOf: (item: A) => string
  /** The page's columns. */
  readonly select: Statement.Fragment
  /** `FROM … WHERE …` of the rows with their details, for the page. */
  readonly rowsFrom: Statement.Fragment
  /** `FROM … WHERE …` of the same rows' sort keys alone, for counting; `rowsFrom` when it reads one table. */
  readonly keysFrom?: Statement.Fragment
} & SortValueOf<A, F>): Effect.Effect<Page<A>, SqlError.SqlError, Cursors> =>
  Effect.gen(function*() {
    const { columns, request, sql } = options
    const keysFrom = options.keysFrom ?? options.rowsFrom
    const column = sql.literal(columns[request.sortBy])
    const id = sql.literal(columns.id)
    const direction = Option.match(request.cursor, { onNone: () => "after" as const, onSome: (c) => c.direction })
    // Walking backwards reads in the opposite order and flips the rows afterwards.
    const ascending = (request.sortOrder === "asc") === (direction === "after")
    const order = sql.literal(ascending ? "ASC" : "DESC")
    const key = (value: string) => request.sortBy === "name" ? sql`${value}` : sql`${value}::timestamptz`
    // The page lies beyond the cursor in reading order; its other side, the cursor included, is the
    // complement, written as a comparison rather than NOT (…) so that the index bounds that scan too.
    const [pageSide, otherSide] = ascending ? [">", "<="] : ["<", ">="]
    const comparedToCursor = (operator: string, { id: cursorId, value }: CursorPosition) =>
      sql`(${column}, ${id}) ${sql.literal(operator)} (${key(value)}, ${cursorId}::uuid)`
    const total = sql`(SELECT count(*)::int ${keysFrom})`
    const anythingOnOtherSide = Option.match(request.cursor, {
      onNone: () => sql`FALSE`,
      onSome: (cursor) => sql`EXISTS (SELECT 1 ${keysFrom} AND ${comparedToCursor(otherSide, cursor)})`
    })

    const rows = yield* sql<A & WithPageMeta>`SELECT ${options.select},
        ${total} AS "_total", ${anythingOnOtherSide} AS "_otherSide"
        ${options.rowsFrom} AND ${
      Option.match(request.cursor, { onNone: () => sql`TRUE`, onSome: (cursor) => comparedToCursor(pageSide, cursor) })
    }
        ORDER BY ${column} ${order}, ${id} ${order} LIMIT ${request.limit + 1}`
    const meta: PageMeta = rows.length > 0
      ? { total: rows[0]._total, otherSide: rows[0]._otherSide }
      : (yield* sql<PageMeta>`SELECT ${total} AS total, ${anythingOnOtherSide} AS "otherSide"`)[0]
    const sortValueOf: (item: A, field: F) => string = options.sortValueOf as ((item: A, field: F) => string) ??
      ((item, field) => (item as unknown as Record<F, string>)[field])
    return yield* toPage(request, direction, rows.map(itemOf), meta, (item) => ({ value: sortValueOf(item, request.sortBy), id: options.idOf(item) }))
  })

interface Position {
  readonly value: string
  readonly id: string
}

const toPage = <A, F extends AnySortField>(
  request: PageRequest<F>,
  direction: "after" | "before",
  rows: ReadonlyArray<A>,
  meta: PageMeta,
  keyOf: (item: A) => Position
) =>
  Effect.map(Cursors, (cursors): Page<A> => {
    const moreAhead = rows.length > request.limit
    const pageRows = rows.slice(0, request.limit)
    const data = direction === "after" ? pageRows : pageRows.reverse()
    const cursorFor = (side: "before" | "after", { id, value }: Position) =>
      cursors.encode(request.scope, { sortBy: request.sortBy, sortOrder: request.sortOrder, direction: side, value, id })

    // With an empty page, the cursor's own position is the boundary on both sides.
    const cursor = Option.getOrUndefined(request.cursor)
    const start = data.length > 0 ? keyOf(data[0]) : cursor
    const end = data.length > 0 ? keyOf(data[data.length - 1]) : cursor
    // Nothing lies between the cursor and the page, so "anything on the cursor's
    // other side" is "anything beyond the page's boundary on that side".
    const hasPrev = direction === "before" ? moreAhead : meta.otherSide
    const hasNext = direction === "after" ? moreAhead : meta.otherSide

    return {
      data,
      total: meta.total,
      nextCursor: hasNext && end ? cursorFor("after", end) : null,
      prevCursor: hasPrev && start ? cursorFor("before", start) : null
    }
  })
