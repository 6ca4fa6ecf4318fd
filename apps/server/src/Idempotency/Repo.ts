import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** A stored answer: its status and its body, byte for byte. */
export interface StoredAnswer {
  readonly status: number
  readonly body: string
}

/** What a request with a key found. */
export type Claim =
  | { readonly _tag: "Claimed" }
  | { readonly _tag: "Answered"; readonly answer: StoredAnswer }
  | { readonly _tag: "Running"; readonly startedAt: Date; readonly abandoned: boolean }
  | { readonly _tag: "OtherRequest" }

/** Where one caller's key for one operation is kept. */
export interface KeyOf {
  readonly caller: string
  readonly operation: string
  readonly key: string
}

export class IdempotencyRepo extends Effect.Service<IdempotencyRepo>()("IdempotencyRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const where = ({ caller, key, operation }: KeyOf) =>
      sql`caller = ${caller} AND operation = ${operation} AND key = ${key}`

    /**
     * Takes the key for this request, or finds what holds it. The insert is the
     * claim: of requests racing with one key, in any process, one inserts and
     * the others find its row. An expired key is taken anew. A request that has
     * run for longer than `abandonedAfterSeconds` without an answer is found
     * abandoned (its process died): `retake` takes its key over.
     */
    const claim = (
      id: KeyOf,
      fingerprint: string,
      options: { readonly keptSeconds: number; readonly abandonedAfterSeconds: number }
    ): Effect.Effect<Claim> =>
      Effect.gen(function*() {
        const inserted = yield* sql`INSERT INTO idempotency_keys (caller, operation, key, fingerprint, expires_at)
          VALUES (${id.caller}, ${id.operation}, ${id.key}, ${fingerprint}, now() + make_interval(secs => ${options.keptSeconds}))
          ON CONFLICT DO NOTHING RETURNING key`
        if (inserted.length > 0) return { _tag: "Claimed" } satisfies Claim
        const retaken = yield* sql`UPDATE idempotency_keys SET fingerprint = ${fingerprint}, started_at = now(),
            response_status = NULL, response_body = NULL, expires_at = now() + make_interval(secs => ${options.keptSeconds})
          WHERE ${where(id)} AND expires_at <= now()
          RETURNING key`
        if (retaken.length > 0) return { _tag: "Claimed" } satisfies Claim
        const [found] = yield* sql<{
          readonly fingerprint: string
          readonly status: number | null
          readonly body: string | null
          readonly startedAt: Date
          readonly abandoned: boolean
        }>`SELECT fingerprint, response_status AS status, response_body AS body, started_at AS "startedAt",
            started_at < now() - make_interval(secs => ${options.abandonedAfterSeconds}) AS abandoned
          FROM idempotency_keys WHERE ${where(id)}`
        // Gone between the two statements: its request failed and freed it; take it.
        if (found === undefined) return yield* claim(id, fingerprint, options)
        if (found.fingerprint !== fingerprint) return { _tag: "OtherRequest" } satisfies Claim
        if (found.status === null || found.body === null) {
          return { _tag: "Running", startedAt: found.startedAt, abandoned: found.abandoned } satisfies Claim
        }
        return { _tag: "Answered", answer: { status: found.status, body: found.body } } satisfies Claim
      }).pipe(Effect.orDie)

    /** Takes over the key of an abandoned request, unless another request took it since: whether this one did. */
    const retake = (id: KeyOf, startedAt: Date, keptSeconds: number) =>
      sql`UPDATE idempotency_keys SET started_at = now(), expires_at = now() + make_interval(secs => ${keptSeconds})
        WHERE ${where(id)} AND response_status IS NULL AND started_at = ${startedAt} RETURNING key`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      )

    const store = (id: KeyOf, answer: StoredAnswer) =>
      sql`UPDATE idempotency_keys SET response_status = ${answer.status}, response_body = ${answer.body}
        WHERE ${where(id)}`.pipe(Effect.asVoid, Effect.orDie)

    /** Frees the key: its request failed in a way that must not be replayed. */
    const release = (id: KeyOf) => sql`DELETE FROM idempotency_keys WHERE ${where(id)}`.pipe(Effect.asVoid, Effect.orDie)

    /** Deletes some expired keys, a bounded number at a time. */
    const sweep = sql`DELETE FROM idempotency_keys WHERE ctid IN (
        SELECT ctid FROM idempotency_keys WHERE expires_at < now() LIMIT 100)`.pipe(Effect.asVoid, Effect.orDie)

    return { claim, retake, store, release, sweep } as const
  })
}) {}
