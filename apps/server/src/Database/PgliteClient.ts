import type { PGlite } from "@electric-sql/pglite"
import { protocol } from "@electric-sql/pglite"
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError } from "@effect/sql"
import type { SqlConnection } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Chunk, Effect, Layer, Scope, Stream } from "effect"
import Pg from "pg"
import PgUtils from "pg/lib/utils.js"

/**
 * @effect/sql's SqlClient on PGlite directly, without `pg` and its wire adapter in between. Each
 * statement is one batch of protocol messages handed to PGlite at once, and its answer is read as
 * PGlite writes it, where the adapter makes five asynchronous calls per statement.
 * What goes in and comes out is what `pg` would send and read: parameters are prepared by `pg`'s
 * own `prepareValue` (dates, JSON, arrays, buffers as binary), statements without parameters go
 * by the simple protocol (several statements in one, as migrations have), and values are parsed
 * by `pg`'s type parsers (int8 and numeric as strings, timestamptz as Date, json as objects).
 * A failed statement is a SqlError whose `cause` is PostgreSQL's error, with its `code`.
 *
 * PGlite is one session: a one-permit semaphore is held by each statement, and by a whole
 * transaction, so that transactions never interleave.
 */

// PostgreSQL's backend messages, as PGlite's protocol parser gives them.
interface Field {
  readonly name: string
  readonly dataTypeID: number
}
type Message =
  | { readonly name: "rowDescription"; readonly fields: ReadonlyArray<Field> }
  | { readonly name: "dataRow"; readonly fields: ReadonlyArray<string | null> }
  | { readonly name: "commandComplete"; readonly text: string }
  | { readonly name: "error"; readonly message: string; readonly code?: string }
  | { readonly name: string }

type Parser = (value: string) => unknown

/** One statement's result, as `pg`'s Result. */
interface Result {
  command: string | null
  rowCount: number | null
  fields: Array<Field>
  parsers: Array<Parser>
  rows: Array<any>
}

const newResult = (): Result => ({ command: null, rowCount: null, fields: [], parsers: [], rows: [] })

const concat = (parts: ReadonlyArray<Uint8Array>) => {
  let length = 0
  for (const part of parts) length += part.length
  const out = new Uint8Array(length)
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

const prepareValue = (value: unknown) => PgUtils.prepareValue(value) as string | Uint8Array | null

const { serialize } = protocol

/** The messages of one statement: the simple protocol without parameters, else parse, bind, describe, execute, sync. */
const messagesOf = (sql: string, params: ReadonlyArray<unknown>) =>
  params.length === 0
    ? serialize.query(sql)
    : concat([
      serialize.parse({ text: sql, types: [] }),
      serialize.bind({ values: params.map(prepareValue) as Array<any> }),
      serialize.describe({ type: "P" }),
      serialize.execute({}),
      serialize.sync()
    ])

/** Reads one statement's answer, message by message, into results as pg's Query makes them. */
class Answer {
  readonly results: Array<Result> = []
  current = newResult()
  failure: unknown = undefined
  ready = false
  readonly parser = new protocol.Parser()
  constructor(readonly asArrays: boolean) {}

  // As pg's Query: a second command in one simple query starts a second result.
  private startIfDone() {
    if (this.current.command !== null) {
      this.results.push(this.current)
      this.current = newResult()
    }
  }

  readonly onData = (chunk: Uint8Array) => this.parser.parse(chunk, this.onMessage)

  readonly onMessage = (raw: unknown) => {
    const message = raw as Message
    switch (message.name) {
      case "rowDescription": {
        this.startIfDone()
        const fields = (message as Extract<Message, { name: "rowDescription" }>).fields
        this.current.fields = fields.map((field) => ({ name: field.name, dataTypeID: field.dataTypeID }))
        this.current.parsers = fields.map((field) => Pg.types.getTypeParser(field.dataTypeID, "text") as Parser)
        break
      }
      case "dataRow": {
        const values = (message as Extract<Message, { name: "dataRow" }>).fields
        const { fields, parsers, rows } = this.current
        if (this.asArrays) {
          const row = new Array(values.length)
          for (let i = 0; i < values.length; i++) row[i] = values[i] === null ? null : parsers[i](values[i]!)
          rows.push(row)
        } else {
          const row: Record<string, unknown> = {}
          for (let i = 0; i < values.length; i++) row[fields[i].name] = values[i] === null ? null : parsers[i](values[i]!)
          rows.push(row)
        }
        break
      }
      case "commandComplete": {
        this.startIfDone()
        const words = (message as Extract<Message, { name: "commandComplete" }>).text.split(" ")
        const count = Number.parseInt(words[words.length - 1], 10)
        this.current.command = words[0]
        this.current.rowCount = Number.isNaN(count) ? null : count
        break
      }
      case "error": {
        this.failure ??= raw
        break
      }
      case "readyForQuery": {
        this.ready = true
        break
      }
    }
  }

  outcome(): Effect.Effect<Array<Result>, SqlError.SqlError> {
    if (this.failure !== undefined) return Effect.fail(statementError(this.failure))
    if (this.current.command !== null || this.results.length === 0) this.results.push(this.current)
    return Effect.succeed(this.results)
  }
}

/**
 * Runs one statement: its results (several for several statements in one). PGlite answers while it is
 * called: the answer is complete when the call returns, unless PGlite itself failed.
 */
const runStatement = (pglite: PGlite, sql: string, params: ReadonlyArray<unknown>, asArrays: boolean) =>
  Effect.suspend(() => {
    const answer = new Answer(asArrays)
    const done = pglite.execProtocolRawStream(messagesOf(sql, params), { syncToFs: false, onRawData: answer.onData })
    if (answer.ready) {
      done.catch(() => {})
      return answer.outcome()
    }
    return Effect.flatMap(Effect.tryPromise({ try: () => done, catch: statementError }), () => answer.outcome())
  })

function statementError(cause: unknown) {
  return new SqlError.SqlError({ cause, message: "Failed to execute statement" })
}

/** Rows as pg gives them: one statement's rows, or one array of rows per statement. */
const rowsOf = (results: ReadonlyArray<Result>) => results.length === 1 ? results[0].rows : results.map((r) => r.rows)

export const make = (pglite: PGlite) =>
  Effect.gen(function*() {
    const compiler = PgClient.makeCompiler()
    const session = yield* Effect.makeSemaphore(1)

    const run = (sql: string, params: ReadonlyArray<unknown>, asArrays = false) => runStatement(pglite, sql, params, asArrays)

    const connection: SqlConnection.Connection = {
      execute: (sql, params, transformRows) =>
        Effect.map(run(sql, params), (results) => {
          const rows = rowsOf(results)
          return transformRows ? transformRows(rows) : rows
        }),
      executeRaw: (sql, params) =>
        Effect.map(run(sql, params), (results) => {
          const raw = results.map(({ command, fields, rowCount, rows }) => ({ command, rowCount, fields, rows }))
          return raw.length === 1 ? raw[0] : raw
        }),
      executeValues: (sql, params) => Effect.map(run(sql, params, true), (results) => results[0].rows),
      executeUnprepared: (sql, params, transformRows) =>
        Effect.map(run(sql, params), (results) => {
          const rows = rowsOf(results)
          return transformRows ? transformRows(rows) : rows
        }),
      executeStream: (sql, params, transformRows) =>
        Stream.flatMap(
          Stream.fromEffect(run(sql, params)),
          (results) => Stream.fromChunk(Chunk.unsafeFromArray(transformRows ? transformRows(results[0].rows) : results[0].rows))
        )
    }

    // The session, held until the scope closes: one statement's, or a whole transaction's.
    const acquirer: SqlConnection.Connection.Acquirer = Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(
        restore(session.take(1)),
        Effect.as(Effect.flatMap(Effect.scope, (scope) => Scope.addFinalizer(scope, session.release(1))), connection)
      )
    )

    return yield* SqlClient.make({
      acquirer,
      compiler,
      spanAttributes: [["db.system.name", "postgresql"], ["db.namespace", "postgres"], ["server.address", "pglite"]]
    })
  })

/** The SqlClient on an open PGlite, which the caller's `acquire` opens and closes. */
export const layer = <E>(acquire: Effect.Effect<PGlite, E, Scope.Scope>): Layer.Layer<SqlClient.SqlClient, E> =>
  Layer.scoped(SqlClient.SqlClient, Effect.flatMap(acquire, make)).pipe(Layer.provide(Reactivity.layer))
