import { SqlClient } from "@effect/sql"
import { AnySortField, BadRequest, SortOrder } from "@postline/domain"
import { Effect, Schema } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"

/** Where a page starts: strictly after or before the item with this sort key. */
export const CursorPosition = Schema.Struct({
  sortBy: AnySortField,
  sortOrder: SortOrder,
  direction: Schema.Literal("after", "before"),
  value: Schema.String,
  id: Schema.UUID
})
export type CursorPosition = typeof CursorPosition.Type

/** The list a cursor was made for: its resource, filter and caller. */
export type CursorScope = string

const decodePosition = Schema.decodeUnknownOption(Schema.parseJson(CursorPosition))

const invalid = new BadRequest({
  message: "Invalid cursor: pass nextCursor or prevCursor of a previous page of this list, unchanged",
  reason: "invalid_cursor"
})

/**
 * Cursors are signed with a secret of this installation, together with the
 * list they belong to, so that a cursor edited by hand, or carried to another
 * list or caller, is refused rather than read.
 */
export class Cursors extends Effect.Service<Cursors>()("Cursors", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [{ value: secret }] = yield* sql<{ value: string }>`SELECT value FROM server_secrets WHERE name = 'cursor'`.pipe(
      Effect.orDie
    )
    const sign = (scope: CursorScope, body: string) =>
      createHmac("sha256", secret).update(scope).update("\n").update(body).digest().subarray(0, 16)

    const encode = (scope: CursorScope, position: CursorPosition): string => {
      const body = Buffer.from(JSON.stringify(position)).toString("base64url")
      return `${body}.${sign(scope, body).toString("base64url")}`
    }

    const decode = (
      scope: CursorScope,
      cursor: string,
      sort: { readonly sortBy: AnySortField; readonly sortOrder: SortOrder }
    ): Effect.Effect<CursorPosition, BadRequest> => {
      const [body, signature, ...rest] = cursor.split(".")
      if (body === undefined || signature === undefined || rest.length > 0) return Effect.fail(invalid)
      const expected = sign(scope, body)
      const given = Buffer.from(signature, "base64url")
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return Effect.fail(invalid)
      const position = decodePosition(Buffer.from(body, "base64url").toString("utf8"))
      if (position._tag === "None") return Effect.fail(invalid)
      if (position.value.sortBy !== sort.sortBy || position.value.sortOrder !== sort.sortOrder) {
        return Effect.fail(
          new BadRequest({
            message: `This cursor belongs to sortBy=${position.value.sortBy}&sortOrder=${position.value.sortOrder}; ` +
              "repeat those parameters with it",
            reason: "cursor_sort_mismatch"
          })
        )
      }
      return Effect.succeed(position.value)
    }

    return { encode, decode } as const
  })
}) {}
