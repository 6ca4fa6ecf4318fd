import { Options } from "@effect/cli"
import { Cursor, PageLimit } from "@postline/domain"
import { Option } from "effect"
import { decodedOption } from "./CommonOptions.js"

/** The paging options of every list command, in the API's words. */
export const pageOptions = {
  limit: decodedOption("limit", PageLimit, "n").pipe(Options.optional, Options.withDescription("How many to show (default 25, at most 100)")),
  cursor: decodedOption("cursor", Cursor, "cursor").pipe(Options.optional, Options.withDescription("The page after the one that printed this cursor"))
}

/** The list query's paging fields, only those given. */
export const pageParams = (page: { readonly limit: Option.Option<number>; readonly cursor: Option.Option<string> }) => ({
  ...Option.match(page.limit, { onNone: () => ({}), onSome: (limit) => ({ limit }) }),
  ...Option.match(page.cursor, { onNone: () => ({}), onSome: (cursor) => ({ cursor }) })
})

/** A table of one page, and how to get the next. */
export const pageText = (table: string, page: { readonly data: ReadonlyArray<unknown>; readonly total: number; readonly nextCursor: string | null }) =>
  page.nextCursor === null ? table : `${table}\n\n${page.data.length} of ${page.total}; the next page: --cursor ${page.nextCursor}`
