import { BadRequest, type SortField } from "@postline/domain"
import { Effect, Schema } from "effect"
import { createHash } from "node:crypto"

/** Where a page starts: strictly after or before the item with this sort key. */
export const CursorPosition = Schema.Struct({
  sortBy: Schema.Literal("createdAt", "updatedAt", "name"),
  sortOrder: Schema.Literal("asc", "desc"),
  direction: Schema.Literal("after", "before"),
  value: Schema.String,
  id: Schema.UUID
})
export type CursorPosition = typeof CursorPosition.Type

const decodePosition = Schema.decodeUnknownOption(Schema.parseJson(CursorPosition))

// The checksum makes a cursor that was edited by hand fail loudly; a cursor
// only ever addresses the caller's own rows, so it needs no secret.
const checksum = (body: string) => createHash("sha256").update(body).digest("base64url").slice(0, 12)

export const encodeCursor = (position: CursorPosition): string => {
  const body = Buffer.from(JSON.stringify(position)).toString("base64url")
  return `${body}.${checksum(body)}`
}

const invalid = new BadRequest({ message: "Invalid cursor: pass nextCursor or prevCursor of a previous page unchanged" })

export const decodeCursor = (
  cursor: string,
  sort: { readonly sortBy: SortField; readonly sortOrder: "asc" | "desc" }
): Effect.Effect<CursorPosition, BadRequest> => {
  const [body, sum, ...rest] = cursor.split(".")
  if (body === undefined || sum === undefined || rest.length > 0 || checksum(body) !== sum) {
    return Effect.fail(invalid)
  }
  const position = decodePosition(Buffer.from(body, "base64url").toString("utf8"))
  if (position._tag === "None") return Effect.fail(invalid)
  if (position.value.sortBy !== sort.sortBy || position.value.sortOrder !== sort.sortOrder) {
    return Effect.fail(
      new BadRequest({
        message: `This cursor belongs to sortBy=${position.value.sortBy}&sortOrder=${position.value.sortOrder}; ` +
          "repeat those parameters with it"
      })
    )
  }
  return Effect.succeed(position.value)
}
