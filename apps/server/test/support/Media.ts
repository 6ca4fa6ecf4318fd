import { HttpServer } from "@effect/platform"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import sharp from "sharp"

export interface UploadResponse {
  readonly status: number
  readonly body: any
}

/** The server's own address, for requests the typed client does not make (forms, signed downloads). */
export const serverUrl = Effect.map(HttpServer.HttpServer, (server) => `http://127.0.0.1:${(server.address as HttpServer.TcpAddress).port}`)

/** A multipart upload of `bytes` as the file `fileName`, with text fields, as a form-sending client makes it. */
export const upload = (options: {
  readonly token: string
  readonly teamId: string
  readonly bytes: Uint8Array
  readonly fileName?: string
  readonly fileType?: string
  readonly fields?: Readonly<Record<string, string>>
}) =>
  Effect.gen(function*() {
    const base = yield* serverUrl
    const form = new FormData()
    for (const [name, value] of Object.entries(options.fields ?? {})) form.append(name, value)
    form.append("file", new Blob([options.bytes], { type: options.fileType ?? "application/octet-stream" }), options.fileName ?? "upload.bin")
    const response = yield* Effect.promise(() =>
      fetch(`${base}/v1/teams/${options.teamId}/assets`, {
        method: "POST",
        headers: { authorization: `Bearer ${options.token}` },
        body: form
      })
    )
    const text = yield* Effect.promise(() => response.text())
    return { status: response.status, body: text === "" ? null : JSON.parse(text) } satisfies UploadResponse
  })

/** GETs a URL the server signed (absolute, or a path on it), with optional headers. */
export interface Downloaded {
  readonly status: number
  readonly headers: { get(name: string): string | null }
  readonly bytes: Uint8Array
}

export const download = (url: string, headers: Record<string, string> = {}): Effect.Effect<Downloaded, never, HttpServer.HttpServer> =>
  Effect.gen(function*() {
    const base = yield* serverUrl
    const response = yield* Effect.promise(() => fetch(url.startsWith("/") ? `${base}${url}` : url, { headers }))
    return { status: response.status, headers: response.headers, bytes: new Uint8Array(yield* Effect.promise(() => response.arrayBuffer())) }
  })

/** A PNG of noise, so that no two differ and none compresses to nothing. */
export const noisyPng = (width: number, height: number) => {
  const pixels = Buffer.alloc(width * height * 3)
  for (let i = 0; i < pixels.length; i++) pixels[i] = Math.floor(Math.random() * 256)
  return Effect.promise(() => sharp(pixels, { raw: { width, height, channels: 3 } }).png().toBuffer())
}

/** A JPEG with EXIF: a camera, and where it was taken (GPS). */
export const jpegWithGps = (width = 64, height = 48) =>
  Effect.promise(() =>
    sharp({ create: { width, height, channels: 3, background: { r: 200, g: 30, b: 30 } } })
      .jpeg()
      .withExif({
        IFD0: { Make: "PostlineCam", Model: "Test" },
        IFD3: { GPSLatitudeRef: "N", GPSLatitude: "48/1 51/1 2964/100", GPSLongitudeRef: "E", GPSLongitude: "2/1 17/1 4024/100" }
      })
      .toBuffer()
  )

/** A PUT of `bytes` to a presigned upload's URL (absolute, or a path on the server) with the headers given. */
export const putUpload = (url: string, bytes: Uint8Array, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const base = yield* serverUrl
    const response = yield* Effect.promise(() =>
      fetch(url.startsWith("/") ? `${base}${url}` : url, { method: "PUT", body: bytes, headers })
    )
    const text = yield* Effect.promise(() => response.text())
    return {
      status: response.status,
      body: response.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : text
    } satisfies UploadResponse
  })

/** An MP4 as file-type reads one (an `ftyp` box, isom and mp42, then one `mdat` box of noise), `size` bytes long. */
export const mp4Bytes = (size: number) => {
  const bytes = randomBytes(size)
  bytes.writeUInt32BE(24, 0)
  bytes.write("ftypisom", 4, "latin1")
  bytes.writeUInt32BE(0x200, 12)
  bytes.write("isommp42", 16, "latin1")
  bytes.writeUInt32BE(size - 24, 24)
  bytes.write("mdat", 28, "latin1")
  return bytes
}
