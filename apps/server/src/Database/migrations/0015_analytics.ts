import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Analytics: a live read of an account's figures is paid for with an `analytics` entry in the credits ledger.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The kinds of the ledger are those of the constraint before, and `analytics`.
  yield* addLedgerKind(sql, "analytics")
})

/** Adds `kind` to credit_transactions' CHECK, keeping the kinds another migration may have added. */
const addLedgerKind = (sql: SqlClient.SqlClient, kind: "analytics") =>
  Effect.gen(function*() {
    const [row] = yield* sql<{ readonly definition: string }>`
      SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint
      WHERE conrelid = 'credit_transactions'::regclass AND conname = 'credit_transactions_kind_check'`
    const kinds = [...(row?.definition ?? "").matchAll(/'([a-z_]+)'/g)].map((match) => match[1]!)
    const all = [...new Set([...kinds, kind])]
    yield* sql`ALTER TABLE credit_transactions DROP CONSTRAINT IF EXISTS credit_transactions_kind_check`
    // DDL takes no parameters; every kind matched [a-z_]+ above.
    const list = all.map((each) => `'${each}'`).join(", ")
    yield* sql`ALTER TABLE credit_transactions ADD CONSTRAINT credit_transactions_kind_check
      CHECK (kind IN (${sql.literal(list)}))`
  })
