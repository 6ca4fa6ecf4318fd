import type { Statement } from "@effect/sql"
import { DefaultPageSize, type ListQuery, MaxPageSize, type SortField } from "@postline/domain"
import { Effect, Option } from "effect"
import { type CursorPosition, Cursors, type CursorScope } from "./Cursor.js"

/** A validated list request: defaults applied, limit capped, cursor checked against the list and sort. */
export interface PageRequest {
  readonly scope: CursorScope
  readonly sortBy: SortField
  readonly sortOrder: "asc" | "desc"
  readonly limit: number
  readonly cursor: Option.Option<CursorPosition>
}

/** Reads the list query of the list named by `scope`. */
export const pageRequest = (scope: CursorScope, query: ListQuery) =>
  Effect.gen(function*() {
    const sort = { sortBy: query.sortBy ?? "createdAt", sortOrder: query.sortOrder ?? "desc" } as const
    const limit = Math.min(query.limit ?? DefaultPageSize, MaxPageSize)
    const cursor = query.cursor === undefined
      ? Option.none()
      : Option.some(yield* (yield* Cursors).decode(scope, query.cursor, sort))
    return { scope, ...sort, limit, cursor } satisfies PageRequest
  })

export interface Page<A> {
  readonly data: ReadonlyArray<A>
  readonly total: number
  readonly nextCursor: string | null
  readonly prevCursor: string | null
}

interface Keyed {
  readonly id: string
  readonly createdAt: string
  readonly updatedAt: string
  readonly name: string
}

/** The columns, qualified, that hold each sort key and the tie-breaking id. */
export type SortColumns = Record<SortField | "id", string>

/** The sort columns of a table aliased `alias` with the usual column names. */
export const sortColumnsOf = (alias: string): SortColumns => ({
  createdAt: `${alias}.created_at`,
  updatedAt: `${alias}.updated_at`,
  name: `${alias}.name`,
  id: `${alias}.id`
})

/**
 * Keyset pagination over `(sort column, id)`: with an index on them, every
 * page, the thousandth as the first, is one index range scan. Sorting and
 * comparing always use the same column pair, so the order is total and pages
 * never overlap or skip.
 */
export const keyset = (sql: Statement.Constructor, columns: SortColumns, request: PageRequest) => {
  const column = sql.literal(columns[request.sortBy])
  const id = sql.literal(columns.id)
  const key = (value: string) => request.sortBy === "name" ? sql`${value}` : sql`${value}::timestamptz`
  const direction = directionOf(request)
  // Walking backwards reads in the opposite order and flips the rows afterwards.
  const ascending = (request.sortOrder === "asc") === (direction === "after")

  const beyond = (position: { readonly value: string; readonly id: string }, forward: boolean) =>
    sql`(${column}, ${id}) ${sql.literal(forward === (request.sortOrder === "asc") ? ">" : "<")} (${
      key(position.value)
    }, ${position.id}::uuid)`

  const order = sql.literal(ascending ? "ASC" : "DESC")
  return {
    /** Condition selecting the rows of this page's side of the cursor. */
    where: Option.match(request.cursor, {
      onNone: () => sql`TRUE`,
      onSome: (cursor) => beyond(cursor, cursor.direction === "after")
    }),
    orderBy: sql`${column} ${order}, ${id} ${order}`,
    /** One row more than the page, to learn whether more follow. */
    limit: request.limit + 1,
    /** Condition selecting rows after (`forward`) or before a position, in list order. */
    beyond
  }
}

const directionOf = (request: PageRequest) =>
  Option.match(request.cursor, { onNone: () => "after" as const, onSome: (cursor) => cursor.direction })

interface Position {
  readonly value: string
  readonly id: string
}

const keyOf = (sortBy: SortField, item: Keyed): Position => ({ value: item[sortBy], id: item.id })

/**
 * Assembles a page from the rows fetched with `keyset(...)`. `existsBeyond`
 * answers whether any row lies on the far side of a boundary; it is asked only
 * where the fetched rows cannot tell.
 */
export const toPage = <A extends Keyed, E, R>(options: {
  readonly request: PageRequest
  readonly rows: ReadonlyArray<A>
  readonly total: number
  readonly existsBeyond: (side: "before" | "after", boundary: { readonly value: string; readonly id: string }) => Effect.Effect<boolean, E, R>
}): Effect.Effect<Page<A>, E, R | Cursors> =>
  Effect.gen(function*() {
    const cursors = yield* Cursors
    const { request, rows, total } = options
    const direction = directionOf(request)
    const hasMoreInDirection = rows.length > request.limit
    const pageRows = rows.slice(0, request.limit)
    const data = direction === "after" ? pageRows : [...pageRows].reverse()
    const cursorFor = (direction: "before" | "after", { id, value }: Position) =>
      cursors.encode(request.scope, { sortBy: request.sortBy, sortOrder: request.sortOrder, direction, value, id })

    const first = data[0]
    const last = data[data.length - 1]
    // With an empty page, the cursor's own position is the boundary on both sides.
    const startBoundary = first ? keyOf(request.sortBy, first) : Option.getOrUndefined(request.cursor)
    const endBoundary = last ? keyOf(request.sortBy, last) : Option.getOrUndefined(request.cursor)

    const hasPrev = direction === "before"
      ? hasMoreInDirection
      : startBoundary !== undefined && Option.isSome(request.cursor) && (yield* options.existsBeyond("before", startBoundary))
    const hasNext = direction === "after"
      ? hasMoreInDirection
      : endBoundary !== undefined && (yield* options.existsBeyond("after", endBoundary))

    return {
      data,
      total,
      nextCursor: hasNext && endBoundary ? cursorFor("after", endBoundary) : null,
      prevCursor: hasPrev && startBoundary ? cursorFor("before", startBoundary) : null
    }
  })
