// S9's baseline (bench/README.md): a raw node:http server that takes `POST /v1/teams/{teamId}/assets`, a
// multipart/form-data body with one part named `file`, and streams that part into the storage folder
// (MEDIA_DIR) as it arrives, hashing it with SHA-256 and counting it: written beside its place, synced and
// renamed into place, as the server's folder storage does. It answers 201 with the file's id, size and hash.
//
// The minimal equivalent of what the server must do for any upload: no framework, no database (a bearer token
// must be present, but nothing looks it up), no Effect, and no image decoding: the server also reads the image
// and writes it again with sharp (and a WebP thumbnail), which this does not. A hand-written streaming parser, so
// that no multipart library's cost is counted: the body is never held whole, only the part of a delimiter that may
// straddle two chunks.
import { createHash, randomUUID } from "node:crypto"
import { mkdirSync } from "node:fs"
import { open, rename, rm } from "node:fs/promises"
import { createServer } from "node:http"
import { join } from "node:path"

const port = Number(process.env.PORT ?? 3001)
const mediaDir = process.env.MEDIA_DIR
if (!mediaDir) throw new Error("MEDIA_DIR is required")
mkdirSync(mediaDir, { recursive: true })

const route = /^\/v1\/teams\/[0-9a-f-]{36}\/assets$/

const answer = (response, status, body) => {
  const text = JSON.stringify(body)
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  response.end(text)
}

/** Why a form is refused (400). */
class FormError extends Error {}

/**
 * Reads the form of `request` with `boundary`: the part named `file` is written to `temporaryPath` (through
 * `file`, an open FileHandle) and hashed; other parts (text fields) are skipped. Resolves with its size and hash.
 */
const readForm = (request, boundary, file) =>
  new Promise((resolve, reject) => {
    const opening = Buffer.from(`--${boundary}`)
    const delimiter = Buffer.from(`\r\n--${boundary}`)
    const hash = createHash("sha256")
    let size = 0
    let found = false
    // preamble: before the first boundary; headers: a part's headers; body: its content; after: past a delimiter;
    // end: after the closing delimiter.
    let state = "preamble"
    let inFile = false
    let pending = Buffer.alloc(0)
    let writing = Promise.resolve()
    const write = (bytes) => {
      if (!inFile || bytes.length === 0) return
      size += bytes.length
      hash.update(bytes)
      writing = writing.then(() => file.write(bytes))
    }
    const consume = () => {
      for (;;) {
        if (state === "preamble") {
          const at = pending.indexOf(opening)
          if (at < 0) return
          pending = pending.subarray(at + opening.length)
          state = "after"
        } else if (state === "after") {
          if (pending.length < 2) return
          if (pending[0] === 0x2d && pending[1] === 0x2d) return (state = "end")
          if (pending[0] !== 0x0d || pending[1] !== 0x0a) throw new FormError("a delimiter is not followed by CRLF")
          pending = pending.subarray(2)
          state = "headers"
        } else if (state === "headers") {
          const at = pending.indexOf("\r\n\r\n")
          if (at < 0) {
            if (pending.length > 16_384) throw new FormError("a part's headers are too long")
            return
          }
          const headers = pending.subarray(0, at).toString("latin1")
          pending = pending.subarray(at + 4)
          inFile = /^content-disposition:[^\r\n]*;\s*name="file"/im.test(headers)
          if (inFile && found) throw new FormError("the form has two files")
          found ||= inFile
          state = "body"
        } else if (state === "body") {
          const at = pending.indexOf(delimiter)
          if (at < 0) {
            // All but what may be the start of a delimiter.
            const keep = Math.min(pending.length, delimiter.length - 1)
            write(pending.subarray(0, pending.length - keep))
            pending = pending.subarray(pending.length - keep)
            return
          }
          write(pending.subarray(0, at))
          pending = pending.subarray(at + delimiter.length)
          inFile = false
          state = "after"
        } else return
      }
    }
    request.on("data", (chunk) => {
      try {
        pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
        consume()
      } catch (error) {
        request.destroy()
        reject(error)
        return
      }
      // Backpressure: no more is read while the file's writes are behind.
      request.pause()
      writing.then(() => request.resume(), (error) => (request.destroy(), reject(error)))
    })
    request.on("end", () => {
      writing.then(() => {
        if (state !== "end") return reject(new FormError("the form ends before its closing delimiter"))
        if (!found) return reject(new FormError("the form has no part named file"))
        resolve({ size, sha256: hash.digest("hex") })
      }, reject)
    })
    request.on("error", reject)
  })

const upload = async (request, response) => {
  if (!/^Bearer \S+$/.test(request.headers.authorization ?? "")) return answer(response, 401, { message: "no token" })
  const boundary = /^multipart\/form-data\s*;\s*boundary="?([^";]+)"?/i.exec(request.headers["content-type"] ?? "")?.[1]
  if (boundary === undefined) return answer(response, 400, { message: "not a multipart/form-data form" })
  const id = randomUUID()
  const path = join(mediaDir, `${id}.upload`)
  const temporaryPath = `${path}.partial`
  const file = await open(temporaryPath, "wx", 0o600)
  try {
    const { size, sha256 } = await readForm(request, boundary, file)
    await file.sync()
    await file.close()
    await rename(temporaryPath, path)
    answer(response, 201, { id, size, sha256 })
  } catch (error) {
    await file.close().catch(() => {})
    await rm(temporaryPath, { force: true })
    if (error instanceof FormError) return answer(response, 400, { message: error.message })
    throw error
  }
}

const server = createServer((request, response) => {
  if (request.method === "GET" && request.url === "/health") return answer(response, 200, { status: "ok" })
  if (request.method === "POST" && route.test(request.url)) {
    return upload(request, response).catch((error) => {
      console.error(error)
      if (!response.headersSent) answer(response, 500, { message: "internal error" })
      else response.destroy()
    })
  }
  request.resume()
  answer(response, 404, { message: "not found" })
})
server.keepAliveTimeout = 65_000
server.listen(port, process.env.HOST ?? "127.0.0.1", () => console.log(`upload baseline listening on ${port}`))
for (const signal of ["SIGTERM", "SIGINT"]) process.once(signal, () => server.close(() => process.exit(0)))
