// S9 (bench/README.md): uploads of a PNG of noise as multipart/form-data, each with bytes of its own, sent over
// keep-alive connections for a while; uploads/s, MB/s and latency.
//
// Every upload must differ, or the server answers 200 with the asset it already has (it deduplicates a team's
// files by SHA-256) without storing anything. The image is made once with sharp; each request sends it with one
// more chunk before IEND, a `tEXt` chunk naming the request (with its CRC, so that the PNG stays valid), so no
// two requests send the same bytes, and none is copied: the body is written as its pieces.
import { createHash, randomBytes } from "node:crypto"
import { Agent, request } from "node:http"
import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import { crc32 } from "node:zlib"
import { percentile } from "./load.mjs"

export const MiB = 2 ** 20

/** sharp, from the server's own dependencies: the benchmark has none of its own. */
const loadSharp = async () => {
  const require = createRequire(new URL("../../apps/server/package.json", import.meta.url))
  return (await import(pathToFileURL(require.resolve("sharp")).href)).default
}

const iend = Buffer.from([0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82])

/**
 * A PNG of random RGB pixels of about `bytes` bytes (noise does not compress: the file is about its pixels'
 * size), square; `head` is the file without its final IEND chunk, to which `withText` adds a chunk of its own.
 */
export const makeNoisePng = async (bytes) => {
  const sharp = await loadSharp()
  const side = Math.ceil(Math.sqrt(bytes / 3))
  // Compression level 0: the noise would not compress anyway, and the server's re-encoding is what is measured.
  const png = await sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } }).png({ compressionLevel: 0 }).toBuffer()
  if (!png.subarray(-12).equals(iend)) throw new Error("the PNG does not end with IEND")
  return { width: side, height: side, head: png.subarray(0, png.length - 12), size: png.length }
}

/** The chunks that end an upload's PNG: `tEXt` (keyword `postline-bench`, then `text`) with its CRC, and IEND. */
export const pngTail = (text) => {
  const data = Buffer.concat([Buffer.from("tEXtpostline-bench\0", "latin1"), Buffer.from(text, "latin1")])
  const chunk = Buffer.alloc(data.length + 8)
  chunk.writeUInt32BE(data.length - 4, 0)
  data.copy(chunk, 4)
  chunk.writeUInt32BE(crc32(data), data.length + 4)
  return Buffer.concat([chunk, iend])
}

/** The pieces of a multipart/form-data body with the one part `file`, and its headers. */
const multipart = (pieces, fileName, contentType) => {
  const boundary = `----postline-bench-${randomBytes(12).toString("hex")}`
  const opening = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${fileName}"\r\nContent-Type: ${contentType}\r\n\r\n`
  )
  const closing = Buffer.from(`\r\n--${boundary}--\r\n`)
  const body = [opening, ...pieces, closing]
  return { body, contentType: `multipart/form-data; boundary=${boundary}`, length: body.reduce((sum, b) => sum + b.length, 0) }
}

/**
 * Uploads for `durationSec` from `connections` loops, one upload at a time each, over keep-alive connections:
 * each request the image with a `tEXt` chunk of its own (`runId` and a counter shared by every run, so that no
 * upload repeats an earlier one's bytes, warm-up's included). A loop starts no upload after the duration; the
 * run ends when the last one is answered. Errors: socket errors and answers other than `expectStatus` (201).
 */
export const driveUploads = async ({ baseUrl, path, token, image, connections, durationSec, counter, expectStatus = 201 }) => {
  const url = new URL(path, baseUrl)
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  const latencies = []
  const statuses = new Map()
  let socketErrors = 0
  let uploadedBytes = 0
  const startedAt = performance.now()
  const deadline = startedAt + durationSec * 1000
  const one = () =>
    new Promise((resolve) => {
      const n = counter.next++
      const tail = pngTail(`${counter.runId}-${n}`)
      const form = multipart([image.head, tail], `bench-${n}.png`, "image/png")
      const sentAt = performance.now()
      const req = request(url, {
        method: "POST",
        agent,
        headers: { authorization: `Bearer ${token}`, "content-type": form.contentType, "content-length": form.length },
        timeout: 120_000
      }, (res) => {
        res.resume()
        res.on("end", () => {
          latencies.push(performance.now() - sentAt)
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
          if (res.statusCode === expectStatus) uploadedBytes += image.head.length + tail.length
          resolve()
        })
      })
      req.on("timeout", () => req.destroy(new Error("timed out")))
      req.on("error", () => {
        socketErrors++
        resolve()
      })
      for (const piece of form.body) req.write(piece)
      req.end()
    })
  await Promise.all(Array.from({ length: connections }, async () => {
    while (performance.now() < deadline) await one()
  }))
  const seconds = (performance.now() - startedAt) / 1000
  agent.destroy()
  const sorted = Float64Array.from(latencies).sort()
  let unexpected = 0
  for (const [status, count] of statuses) if (status !== expectStatus) unexpected += count
  return {
    requests: latencies.length,
    durationSec: seconds,
    rps: latencies.length / seconds,
    mbPerSec: uploadedBytes / MiB / seconds,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    errors: unexpected + socketErrors,
    socketErrors,
    timeouts: 0,
    statuses: Object.fromEntries(statuses)
  }
}

/**
 * One upload, checked: the answer's status, and whether its `sha256` and `size` are those of the bytes sent (the
 * size only when `sameSize`: the server stores the PNG it wrote again, the baseline the bytes as sent).
 */
export const checkUpload = async ({ baseUrl, path, token, image, counter, sameSize }) => {
  const tail = pngTail(`${counter.runId}-${counter.next++}-check`)
  const sha256 = createHash("sha256").update(image.head).update(tail).digest("hex")
  const form = multipart([image.head, tail], "bench-check.png", "image/png")
  const res = await fetch(new URL(path, baseUrl), {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": form.contentType },
    body: Buffer.concat(form.body)
  })
  const body = await res.json().catch(() => null)
  const problems = []
  if (res.status !== 201) problems.push(`status ${res.status}: ${JSON.stringify(body)}`)
  else {
    if (body.sha256 !== sha256) problems.push(`sha256 ${body.sha256}, not ${sha256}`)
    if (sameSize && body.size !== image.head.length + tail.length) problems.push(`size ${body.size}, not ${image.head.length + tail.length}`)
  }
  return problems
}
