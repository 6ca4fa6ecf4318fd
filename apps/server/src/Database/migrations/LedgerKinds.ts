import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Adds `kind` to credit_transactions' CHECK, keeping the kinds another migration may have added. */
export const addLedgerKind = (sql: SqlClient.SqlClient, kind: "analytics" | "overage") =>
  Effect.gen(function*() {
    const [row] = yield* sql<{ readonly definition: string }>`
      SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint
      WHERE conrelid = 'credit_transactions'::regclass AND conname = 'credit_transactions_kind_check'`
    // Without it the kinds before are unknown: replacing it with `kind` alone would refuse every other entry.
    if (row === undefined) {
      return yield* Effect.dieMessage("credit_transactions_kind_check is missing: the ledger's kinds cannot be extended")
    }
    const kinds = [...row.definition.matchAll(/'([a-z_]+)'/g)].map((match) => match[1]!)
    const all = [...new Set([...kinds, kind])]
    yield* sql`ALTER TABLE credit_transactions DROP CONSTRAINT credit_transactions_kind_check`
    // DDL takes no parameters; every kind matched [a-z_]+ above.
    const list = all.map((each) => `'${each}'`).join(", ")
    yield* sql`ALTER TABLE credit_transactions ADD CONSTRAINT credit_transactions_kind_check
      CHECK (kind IN (${sql.literal(list)}))`
  })
