import { Schema } from "effect"
import { invalidUnless, oneOf, optional } from "./Fields.js"

export const DefaultPageSize = 25
export const MaxPageSize = 100

/** A page size: a string of a positive integer; values above 100 are capped where the page is read. */
const pageLimitDescription = `Page size, a positive integer; default ${DefaultPageSize}, capped at ${MaxPageSize}`

// Digits with at least one that is not 0: `0` and `00` are refused by the pattern itself, so the document says so.
export const PageLimit = Schema.compose(
  Schema.String.pipe(Schema.pattern(/^[0-9]*[1-9][0-9]*$/)).annotations({ description: pageLimitDescription }),
  Schema.NumberFromString
).annotations({
  ...invalidUnless("must be a positive integer"),
  identifier: "PageLimit",
  arbitrary: () => (fc) => fc.integer({ min: 1, max: 1000 }),
  description: pageLimitDescription
})

export const SortOrder = oneOf("asc", "desc").annotations({
  identifier: "SortOrder",
  description: "Sort direction; default desc"
})
export type SortOrder = typeof SortOrder.Type

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

/** Every field any list sorts by, as cursors carry it; each list accepts its own subset. */
export const AnySortField = Schema.Literal("createdAt", "updatedAt", "name", "scheduledAt")
export type AnySortField = typeof AnySortField.Type

/** The query parameters every list takes (cursor, limit, sortBy, sortOrder), for a list sorted by `sortBy`. */
export const listQueryFieldsSortedBy = <F extends AnySortField>(sortBy: Schema.Schema<F, F>) => ({
  cursor: optional(Cursor),
  limit: optional(PageLimit),
  sortBy: optional(sortBy),
  sortOrder: optional(SortOrder)
})

export const listQueryFields = listQueryFieldsSortedBy(SortField)

export const ListQuery = Schema.Struct(listQueryFields)
export type ListQuery = typeof ListQuery.Type

/** The envelope of every list: a page of items, the total and the cursors either side. */
export const ListEnvelope = <Item extends Schema.Schema.Any>(item: Item, identifier: string) =>
  Schema.Struct({
    data: Schema.Array(item),
    total: Schema.Number,
    nextCursor: Schema.NullOr(Cursor),
    prevCursor: Schema.NullOr(Cursor)
  }).annotations({ identifier })
