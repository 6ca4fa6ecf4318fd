import type { SqlError } from "@effect/sql"
import { Either } from "effect"
import { StartupError } from "../StartupError.js"

/** Where `DATABASE_URL` points, without its user or password: for the start log and for messages. */
export interface PostgresTarget {
  /** `host:port` (a socket folder in place of the host when the URL gives one). */
  readonly server: string
  readonly database: string
}

const example = "postgres://USER:PASSWORD@HOST:5432/DATABASE"

const malformed = (why: string) =>
  Either.left(new StartupError({ message: `DATABASE_URL is not a valid PostgreSQL URL: ${why}; write it as ${example}` }))

/**
 * `DATABASE_URL` checked before any connection: node-postgres reads almost anything as some URL (a plain word
 * becomes a database on a host named "base"), which would then be retried as if the server were down. The
 * value is never quoted: it may hold the password.
 */
export const parsePostgresUrl = (text: string): Either.Either<PostgresTarget, StartupError> => {
  if (text.trim() === "") return malformed("it is empty (unset it to use the embedded database)")
  const url = URL.parse(text)
  if (url === null) return malformed("it does not parse as a URL")
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    return malformed(`its scheme is "${url.protocol.slice(0, 20)}", not "postgres:"`)
  }
  try {
    const host = decodeURIComponent(url.hostname || url.searchParams.get("host") || "localhost")
    const port = url.port || url.searchParams.get("port") || "5432"
    // node-postgres connects to the database named after the user when the URL names none.
    const database = decodeURIComponent(url.pathname.replace(/^\//, "")) || decodeURIComponent(url.username) || "(the user's)"
    return Either.right({ server: `${host}:${port}`, database })
  } catch {
    return malformed("it holds a malformed %-escape")
  }
}

/** The SQLSTATE of a failed connection, as node-postgres reports it. */
const sqlStateOf = (error: SqlError.SqlError): string | undefined => {
  const code = (error.cause as { readonly code?: unknown } | undefined)?.code
  return typeof code === "string" ? code : undefined
}

const reasonOf = (error: SqlError.SqlError) => (error.cause as Error | undefined)?.message ?? error.message

/**
 * The StartupError for a connection PostgreSQL refused for good: no such database, a user or password it
 * does not accept, no right to connect. Anything else (refused, timed out, a server starting up: 57P03,
 * too many connections) may pass, and is retried.
 */
export const unfixableByWaiting = (target: PostgresTarget, error: SqlError.SqlError): SqlError.SqlError | StartupError => {
  switch (sqlStateOf(error)) {
    case "3D000":
      return new StartupError({
        message: `The database "${target.database}" does not exist on ${target.server}: ` +
          `create it (createdb ${target.database}) or fix DATABASE_URL`
      })
    case "28P01":
    case "28000":
      return new StartupError({
        message: `PostgreSQL on ${target.server} refused the login (${reasonOf(error)}): fix the user or password ` +
          "in DATABASE_URL, or the server's pg_hba.conf"
      })
    case "42501":
      return new StartupError({
        message: `PostgreSQL on ${target.server} refused the connection (${reasonOf(error)}): ` +
          `grant CONNECT on "${target.database}" to the user of DATABASE_URL`
      })
  }
  // node-postgres's own words when the server asks for a password that the URL does not give.
  if (/client password must be a string/.test(reasonOf(error))) {
    return new StartupError({
      message: `PostgreSQL on ${target.server} asks for a password: add it to DATABASE_URL (${example})`
    })
  }
  return error
}
