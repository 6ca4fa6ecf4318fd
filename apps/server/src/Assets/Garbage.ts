import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Objects in storage that nothing uses, or will once an upload gives up: `storage_garbage` holds each key
 * until a sweep has removed its object. An upload writes its keys there, due later, before it writes the
 * objects, and takes them out in the transaction that saves its asset: a process that dies between the two
 * leaves nothing behind for good.
 */
export class StorageGarbage extends Effect.Service<StorageGarbage>()("Assets/StorageGarbage", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const keysJson = (keys: ReadonlyArray<string>) => JSON.stringify(keys)

    /** The keys become garbage in `seconds` unless `release`d before. */
    const reserve = (keys: ReadonlyArray<string>, seconds: number) =>
      sql`INSERT INTO storage_garbage (key, not_before)
        SELECT value, now() + make_interval(secs => ${seconds}) FROM jsonb_array_elements_text(${keysJson(keys)}::jsonb)
        ON CONFLICT (key) DO UPDATE SET not_before = excluded.not_before`.pipe(Effect.asVoid, Effect.orDie)

    /** The keys are in use: the sweep leaves them alone. */
    const release = (keys: ReadonlyArray<string>) =>
      sql`DELETE FROM storage_garbage WHERE key IN (SELECT jsonb_array_elements_text(${keysJson(keys)}::jsonb))`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    /**
     * Removes up to `limit` due objects with `remove`. Each key is leased for a few minutes first, not locked
     * for the whole sweep: the embedded database has one connection, which the storage's round trips must
     * not hold. Another process's sweep takes other keys; a key whose removal fails comes due again when its
     * lease ends. Answers how many went.
     */
    const sweep = <E>(limit: number, remove: (key: string) => Effect.Effect<void, E>) =>
      Effect.gen(function*() {
        const due = yield* sql<{ readonly key: string }>`UPDATE storage_garbage SET not_before = now() + interval '5 minutes'
          WHERE key IN (SELECT key FROM storage_garbage WHERE not_before <= now() ORDER BY not_before LIMIT ${limit}
            FOR UPDATE SKIP LOCKED)
          RETURNING key`
        const outcomes = yield* Effect.forEach(
          due,
          ({ key }) => Effect.map(Effect.either(remove(key)), (outcome) => ({ key, removed: outcome._tag === "Right" })),
          { concurrency: 8 }
        )
        const gone = outcomes.filter(({ removed }) => removed).map(({ key }) => key)
        if (gone.length > 0) yield* release(gone)
        return gone.length
      }).pipe(Effect.orDie)

    return { reserve, release, sweep } as const
  })
}) {}
