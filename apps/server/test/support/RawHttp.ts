import { Effect } from "effect"
import { connect, type Socket } from "node:net"

export interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: unknown
}

/** One HTTP/1.1 connection driven by hand: what a keep-alive client does, byte for byte. */
export interface RawConnection {
  readonly socket: Socket
  readonly write: (text: string) => void
  /** The next whole response on the connection (bodies with a Content-Length). */
  readonly response: () => Promise<RawResponse>
  /** Resolves when the server has closed the connection; says whether it was reset. */
  readonly closed: Promise<{ readonly reset: boolean }>
}

export const rawConnection = (base: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<RawConnection>((resolve) => {
        const url = new URL(base)
        let buffered = Buffer.alloc(0)
        let onData = () => {}
        let reset = false
        const socket = connect(Number(url.port), url.hostname, () =>
          resolve({
            socket,
            write: (text) => socket.write(text),
            response: () =>
              new Promise((done, fail) => {
                const attempt = () => {
                  const end = buffered.indexOf("\r\n\r\n")
                  if (end < 0) return false
                  const [statusLine, ...lines] = buffered.subarray(0, end).toString().split("\r\n")
                  const headers = Object.fromEntries(lines.map((line) => {
                    const colon = line.indexOf(":")
                    return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]
                  }))
                  const length = Number(headers["content-length"] ?? 0)
                  if (buffered.length < end + 4 + length) return false
                  const body = buffered.subarray(end + 4, end + 4 + length).toString()
                  buffered = buffered.subarray(end + 4 + length)
                  done({ status: Number(statusLine!.split(" ")[1]), headers, body: body ? JSON.parse(body) : undefined })
                  return true
                }
                if (attempt()) return
                onData = () => void attempt()
                socket.once("close", () => fail(new Error(`closed before a whole response (reset: ${reset})`)))
              }),
            closed: new Promise((done) => socket.once("close", () => done({ reset })))
          }))
        socket.on("data", (chunk: Buffer) => {
          buffered = Buffer.concat([buffered, chunk])
          onData()
        })
        socket.on("error", (error: NodeJS.ErrnoException) => (reset = reset || error.code === "ECONNRESET"))
      })
    ),
    ({ socket }) => Effect.sync(() => socket.destroy())
  )
