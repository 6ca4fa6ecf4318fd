// A TCP proxy in front of PostgreSQL that records the statements a client
// sends (Parse + Bind, or simple Query), so that the parity check can tell
// whether the baseline runs the same SQL as the server. Used only for the
// parity check, never while measuring.
import { createServer, connect } from "node:net"

const SSL_REQUEST = 80877103
const GSSENC_REQUEST = 80877104

/** Splits the client's byte stream into protocol messages and reports Parse/Bind/Query. */
const frontendParser = (onStatement) => {
  let buffer = Buffer.alloc(0)
  let startup = true
  let lastParsed = new Map() // statement name -> text
  return (chunk) => {
    buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk
    while (true) {
      if (startup) {
        if (buffer.length < 8) return
        const length = buffer.readInt32BE(0)
        if (buffer.length < length) return
        const code = buffer.readInt32BE(4)
        buffer = buffer.subarray(length)
        // After SSLRequest/GSSENCRequest (answered "N") the startup message follows.
        if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) startup = false
        continue
      }
      if (buffer.length < 5) return
      const type = String.fromCharCode(buffer[0])
      const length = buffer.readInt32BE(1)
      if (buffer.length < 1 + length) return
      const body = buffer.subarray(5, 1 + length)
      buffer = buffer.subarray(1 + length)
      if (type === "Q") {
        onStatement({ sql: body.subarray(0, body.indexOf(0)).toString("utf8"), values: [] })
      } else if (type === "P") {
        const nameEnd = body.indexOf(0)
        const name = body.subarray(0, nameEnd).toString("utf8")
        const textEnd = body.indexOf(0, nameEnd + 1)
        lastParsed.set(name, body.subarray(nameEnd + 1, textEnd).toString("utf8"))
      } else if (type === "B") {
        let at = body.indexOf(0) + 1 // portal
        const statementEnd = body.indexOf(0, at)
        const statement = body.subarray(at, statementEnd).toString("utf8")
        at = statementEnd + 1
        const formats = body.readInt16BE(at)
        at += 2 + 2 * formats
        const count = body.readInt16BE(at)
        at += 2
        const values = []
        for (let i = 0; i < count; i++) {
          const len = body.readInt32BE(at)
          at += 4
          if (len === -1) values.push(null)
          else {
            values.push(body.subarray(at, at + len).toString("utf8"))
            at += len
          }
        }
        onStatement({ sql: lastParsed.get(statement) ?? "(unknown prepared statement)", values })
      }
    }
  }
}

const begins = /^\s*(?:BEGIN|START\s+TRANSACTION)\b/i
const ends = /^\s*(?:COMMIT|ROLLBACK|END)\s*;?\s*$/i

/**
 * The statements of a window that belong to it: on each connection, what comes before the end of a transaction
 * whose start came before the window, and what comes after a start whose end comes after it, is work of a poll
 * running on its own timer (the scheduler's, the webhook deliveries'), not of the request the window holds, which
 * is answered only once its own transactions have ended.
 */
const ownStatements = (window) => {
  const byConnection = Map.groupBy(window, (statement) => statement.connection)
  const own = new Set()
  for (const statements of byConnection.values()) {
    const firstEnd = statements.findIndex(({ sql }) => ends.test(sql))
    const firstBegin = statements.findIndex(({ sql }) => begins.test(sql))
    const from = firstEnd !== -1 && (firstBegin === -1 || firstEnd < firstBegin) ? firstEnd + 1 : 0
    const lastBegin = statements.findLastIndex(({ sql }) => begins.test(sql))
    const lastEnd = statements.findLastIndex(({ sql }) => ends.test(sql))
    const to = lastBegin !== -1 && lastBegin > lastEnd ? lastBegin : statements.length
    for (const statement of statements.slice(from, to)) own.add(statement)
  }
  return window.filter((statement) => own.has(statement)).map(({ sql, values }) => ({ sql, values }))
}

/** Starts a proxy to `target` ({host, port}); `take` answers what its clients sent since the last `take`. */
export const startSqlCapture = (target) =>
  new Promise((resolve, reject) => {
    const statements = []
    const sockets = new Set()
    let connections = 0
    const server = createServer((client) => {
      const upstream = connect(target.port, target.host)
      sockets.add(client)
      sockets.add(upstream)
      const connection = connections++
      const parse = frontendParser((statement) => statements.push({ ...statement, connection }))
      client.on("data", (chunk) => {
        try {
          parse(chunk)
        } catch {
          // A message we cannot read is still forwarded.
        }
        upstream.write(chunk)
      })
      upstream.on("data", (chunk) => client.write(chunk))
      const close = () => {
        client.destroy()
        upstream.destroy()
      }
      client.on("error", close)
      upstream.on("error", close)
      client.on("close", close)
      upstream.on("close", close)
    })
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () =>
      resolve({
        port: server.address().port,
        take: () => ownStatements(statements.splice(0, statements.length)),
        close: () =>
          new Promise((done) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => done())
          })
      }))
  })

/** Whitespace-insensitive text of a statement with its parameters, for comparison. */
export const normalise = ({ sql, values }) => `${sql.replace(/\s+/g, " ").trim()}  -- ${JSON.stringify(values)}`
