/**
 * One uploaded image decoded and written again, in a process of its own (ImageJobs.ts starts it, one per image):
 * the memory decoding takes goes back to the system when the process ends, and when memory runs out the kernel
 * ends this process rather than the server. It tells the server the image's size from its header, waits for
 * its turn (the server bounds the pixels decoding at once), then writes the stored copy and its thumbnail.
 *
 * It runs as it is: from the bundle (its own chunk) and from the sources (Node strips the types), so it imports
 * nothing of the server's and uses only erasable TypeScript.
 */
import type sharpModule from "sharp"
import type { Sharp } from "sharp"
import { readFileSync, statSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"

/** The file this module runs from, for the server to start. */
export const imageJobScript = fileURLToPath(import.meta.url)

export interface ImageJobRequest {
  readonly input: string
  readonly mime: string
  readonly maxPixels: number
  /** Where the stored copy and the thumbnail go. */
  readonly output: string
  readonly thumbnail: string
}

export type ImageJobMessage =
  | { readonly _tag: "Measured"; readonly pixels: number }
  | { readonly _tag: "Refused"; readonly reason: "unreadable" | "too_many_pixels" }
  | {
    readonly _tag: "Prepared"
    readonly path: string
    readonly format: "jpg" | "png" | "webp" | "gif"
    readonly size: number
    readonly width: number | null
    readonly height: number | null
    readonly thumbnailSize: number
  }

const thumbnailSide = 320

/**
 * Above this many pixels a JPEG is written in one pass, with the standard Huffman tables: optimising the tables
 * or the scans (mozjpeg) keeps every coefficient of the image, about 6 bytes a pixel (bench S11), and took 3.5
 * times the CPU. Below it that costs under 100 MB, and files come out smaller.
 */
const onePassJpegAbove = 16_000_000

/** The minimal part of libheif-js (heic-decode's WebAssembly libheif) used here. */
interface LibHeif {
  readonly ready: Promise<unknown>
  readonly HeifDecoder: new() => { decode: (buffer: Uint8Array) => Array<{ get_width: () => number; get_height: () => number; handle: unknown }> }
  readonly heif_colorspace: { readonly heif_colorspace_RGB: unknown }
  readonly heif_chroma: { readonly heif_chroma_interleaved_RGB: unknown }
  readonly heif_js_decode_image2: (handle: unknown, colorspace: unknown, chroma: unknown) => Promise<{
    readonly code?: number
    readonly channels?: ReadonlyArray<{ readonly width: number; readonly height: number; readonly stride: number; readonly data: Uint8Array }>
  }>
}

/**
 * sharp (CommonJS, native), required when the job runs: the server imports this module only for its path, and
 * must not load libvips by doing so.
 */
const loadSharp = () => createRequire(import.meta.url)("sharp") as typeof sharpModule

class Refusal extends Error {
  readonly reason: "unreadable" | "too_many_pixels"
  constructor(reason: "unreadable" | "too_many_pixels") {
    super(reason)
    this.reason = reason
  }
}

const refusalOf = (cause: unknown) =>
  cause instanceof Refusal ? cause : new Refusal(String((cause as Error)?.message ?? cause).includes("pixel limit") ? "too_many_pixels" : "unreadable")

/**
 * A HEIC as a sharp image of its pixels (sharp's own build reads no HEIC), its size checked from its header
 * (`measured`) before a pixel is decoded. libheif decodes into its WebAssembly memory, as RGB; sharp reads the rows there,
 * moved together in place, without a copy: about 7 bytes a pixel in all, against 20 through heic-decode's RGBA.
 */
const decodeHeic = async (request: ImageJobRequest, measured: (pixels: number) => Promise<void>): Promise<Sharp> => {
  const fromHeicDecode = createRequire(createRequire(import.meta.url).resolve("heic-decode"))
  const libheif = fromHeicDecode("libheif-js/wasm-bundle") as LibHeif
  await libheif.ready
  const first = new libheif.HeifDecoder().decode(readFileSync(request.input))[0]
  if (first === undefined) throw new Refusal("unreadable")
  const width = first.get_width()
  const height = first.get_height()
  await measured(width * height)
  const decoded = await libheif.heif_js_decode_image2(first.handle, libheif.heif_colorspace.heif_colorspace_RGB, libheif.heif_chroma.heif_chroma_interleaved_RGB)
  const plane = decoded.channels?.[0]
  if (decoded.code !== undefined || plane === undefined || plane.width !== width || plane.height !== height) throw new Refusal("unreadable")
  const row = width * 3
  for (let y = 1; y < height; y++) plane.data.copyWithin(y * row, y * plane.stride, y * plane.stride + row)
  return loadSharp()(Buffer.from(plane.data.buffer, plane.data.byteOffset, row * height), { raw: { width, height, channels: 3 } })
}

const prepareImage = async (request: ImageJobRequest, measured: (pixels: number) => Promise<void>): Promise<ImageJobMessage> => {
  const sharp = loadSharp()
  // Nothing is kept for a later image (there is none in this process); one libvips thread: a second would
  // hold buffers of its own, and the server runs at most MEDIA_PROCESSING_CONCURRENCY of these at once.
  sharp.cache(false)
  sharp.concurrency(1)
  const heic = request.mime === "image/heic" || request.mime === "image/heif"
  const gif = request.mime === "image/gif"
  let pixels = 0
  const counted = async (count: number) => {
    if (count > request.maxPixels) throw new Refusal("too_many_pixels")
    pixels = count
    await measured(count)
  }
  let source: Sharp
  if (heic) {
    source = await decodeHeic(request, counted)
  } else {
    source = sharp(request.input, { limitInputPixels: request.maxPixels, animated: gif, failOn: "error" })
    const metadata = await source.metadata()
    await counted((metadata.width ?? 0) * (metadata.pageHeight ?? metadata.height ?? 0))
  }
  const format = request.mime === "image/png" ? "png" : request.mime === "image/webp" ? "webp" : gif ? "gif" : "jpg"
  let written: { path: string; size: number; width: number | null; height: number | null }
  if (gif) {
    // Stored as it came: it has no EXIF, and its frames would not survive a rewrite.
    const metadata = await source.metadata()
    written = { path: request.input, size: statSync(request.input).size, width: metadata.width ?? null, height: metadata.pageHeight ?? metadata.height ?? null }
  } else {
    const pipeline = source.rotate()
    const info = await (format === "png"
      ? pipeline.png()
      : format === "webp"
      ? pipeline.webp({ quality: 90 })
      : pipeline.jpeg(pixels > onePassJpegAbove ? { quality: 90, optimiseCoding: false } : { quality: 90, mozjpeg: true })).toFile(request.output)
    written = { path: request.output, size: info.size, width: info.width, height: info.height }
  }
  const thumbnail = await sharp(written.path, { limitInputPixels: request.maxPixels })
    .rotate()
    .resize(thumbnailSide, thumbnailSide, { fit: "inside", withoutEnlargement: true })
    .webp({ quality: 80 })
    .toFile(request.thumbnail)
  return { _tag: "Prepared", path: written.path, format, size: written.size, width: written.width, height: written.height, thumbnailSize: thumbnail.size }
}

/** The job's side of the conversation: the request, its size, the go-ahead, the answer; then the process ends. */
const serve = () => {
  // The server is gone (it ended, or was killed): nobody waits for this image any more.
  process.once("disconnect", () => process.exit(1))
  process.once("message", (request: ImageJobRequest) => {
    // When memory runs out, the kernel ends the process that scores highest: this one, not the server.
    try {
      writeFileSync("/proc/self/oom_score_adj", "1000")
    } catch {
      // not Linux: nothing to adjust
    }
    const send = (message: ImageJobMessage) => new Promise<void>((done) => process.send!(message, () => done()))
    const measured = async (pixels: number) => {
      const turn = new Promise<void>((go) => process.once("message", () => go()))
      await send({ _tag: "Measured", pixels })
      await turn
    }
    prepareImage(request, measured).then(
      (prepared) => send(prepared),
      (cause) => send({ _tag: "Refused", reason: refusalOf(cause).reason })
    ).then(() => process.exit(0))
  })
}

if (process.argv[1] === imageJobScript && process.send !== undefined) serve()
