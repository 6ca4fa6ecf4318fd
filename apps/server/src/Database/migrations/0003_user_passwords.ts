import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Passwords (scrypt hashes) are set by `pnpm admin users set-password`, for the device-approval page. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE users ADD COLUMN password_hash text`
})
