import { Schema } from "effect"
import { invalidUnless, oneOf, optional } from "./Fields.js"

export const DefaultPageSize = 25
export const MaxPageSize = 100

/** A page size: a string of a positive integer; values above 100 are capped where the page is read. */
const pageLimitDescription = `Page size, a positive integer; default ${DefaultPageSize}, capped at ${MaxPageSize}`

export const PageLimit = Schema.compose(
  Schema.String.pipe(Schema.pattern(/^[0-9]+$/)).annotations({ description: pageLimitDescription }),
  Schema.NumberFromString
).pipe(
  Schema.filter((n) => n > 0)
).annotations({
  ...invalidUnless("must be a positive integer"),
  identifier: "PageLimit",
  description: pageLimitDescription
})

export const SortOrder = oneOf("asc", "desc").annotations({
  identifier: "SortOrder",
  description: "Sort direction; default desc"
})

export const Cursor = Schema.String.annotations({
  identifier: "Cursor",
  description: "Opaque cursor from nextCursor or prevCursor of a previous page",
  ...invalidUnless("must be a single cursor string")
})

/** The fields lists sort by; ties are broken by id. */
export const SortField = oneOf("createdAt", "updatedAt", "name").annotations({
  identifier: "SortField",
  description: "Field to sort by; default createdAt"
})
export type SortField = typeof SortField.Type

/** The shared list query parameters of contract 4.1, for a list sorted by `sortBy`. */
export const listQueryFieldsSortedBy = <F extends SortField>(sortBy: Schema.Schema<F, F>) => ({
  cursor: optional(Cursor),
  limit: optional(PageLimit),
  sortBy: optional(sortBy),
  sortOrder: optional(SortOrder)
})

export const listQueryFields = listQueryFieldsSortedBy(SortField)

export const ListQuery = Schema.Struct(listQueryFields)
export type ListQuery = typeof ListQuery.Type

/** The list envelope of contract 2.4. */
export const ListEnvelope = <Item extends Schema.Schema.Any>(item: Item, identifier: string) =>
  Schema.Struct({
    data: Schema.Array(item),
    total: Schema.Number,
    nextCursor: Schema.NullOr(Cursor),
    prevCursor: Schema.NullOr(Cursor)
  }).annotations({ identifier })
