import { connect } from "node:net"

export interface RawAnswer {
  readonly status: number | undefined
  readonly headers: Record<string, string>
  readonly body: any
  /** The server closed the connection (FIN), rather than leaving it open. */
  readonly closed: boolean
  /** A socket error, such as ECONNRESET, if the connection did not end cleanly. */
  readonly error: string | undefined
  readonly elapsedMs: number
}

const parse = (received: Buffer) => {
  const text = received.toString("latin1")
  const end = text.indexOf("\r\n\r\n")
  if (end === -1) return { status: undefined, headers: {}, body: text }
  const [statusLine, ...lines] = text.slice(0, end).split("\r\n")
  const headers = Object.fromEntries(lines.map((line) => {
    const colon = line.indexOf(":")
    return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]
  }))
  const raw = received.subarray(Buffer.byteLength(text.slice(0, end + 4), "latin1")).toString("utf8")
  const body = headers["content-type"]?.startsWith("application/json") ? JSON.parse(raw) : raw
  return { status: Number(statusLine!.split(" ")[1]), headers, body }
}

/**
 * Writes `parts` to a new connection as they are, one after the other, and
 * collects what comes back until the server closes the connection or
 * `waitMs` passes (then the connection counts as left open).
 */
export const sendRaw = (port: number, parts: ReadonlyArray<string | Buffer>, waitMs = 10_000) =>
  new Promise<RawAnswer>((resolve) => {
    const started = Date.now()
    const socket = connect(port, "127.0.0.1")
    const chunks: Array<Buffer> = []
    let error: string | undefined
    let closed = true
    const timer = setTimeout(() => {
      closed = false
      socket.destroy()
    }, waitMs)
    socket.on("data", (chunk) => chunks.push(chunk))
    socket.on("error", (cause: NodeJS.ErrnoException) => (error = cause.code ?? cause.message))
    socket.on("close", () => {
      clearTimeout(timer)
      resolve({ ...parse(Buffer.concat(chunks)), closed, error, elapsedMs: Date.now() - started })
    })
    for (const part of parts) socket.write(part)
  })

/** An HTTP/1.1 request's head, with `Host` and the given header lines. */
export const head = (requestLine: string, ...headers: ReadonlyArray<string>) =>
  [requestLine, "Host: localhost", ...headers].join("\r\n") + "\r\n\r\n"
