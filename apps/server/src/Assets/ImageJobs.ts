import { Data, Effect } from "effect"
import { type ChildProcess, fork } from "node:child_process"
import { makeFifoLimiter } from "../Concurrency/FifoLimiter.js"
import { lazyModule } from "../LazyModule.js"
import type { ImageJobMessage, ImageJobRequest } from "./ImageJob.js"

/**
 * The file is not what it seemed: its image data cannot be read, or it is larger than the server decodes; or
 * decoding it took more memory than the machine had (the kernel ended its process).
 */
export class ImageRefused extends Data.TaggedError("ImageRefused")<{ readonly reason: "unreadable" | "too_many_pixels" | "out_of_memory" }> {}

export interface Prepared {
  /** The local file to store, and what it is. */
  readonly path: string
  readonly contentType: string
  readonly extension: string
  readonly size: number
  readonly width: number | null
  readonly height: number | null
  /** A WebP thumbnail beside it, for images. */
  readonly thumbnailPath: string | null
  readonly thumbnailSize: number
}

/** The image job's module, loaded only to learn the file to start: the server itself never decodes an image. */
export const ImageJobModule = lazyModule("./ImageJob.js", () => import("./ImageJob.js"), { imageJobScript: "string" })

/** Where a job finds programs and writes temporary files, as the server does. */
const jobEnv = Object.fromEntries(["PATH", "TMPDIR"].flatMap((name) => process.env[name] === undefined ? [] : [[name, process.env[name]!]]))

type Letter = ImageJobMessage | { readonly _tag: "Ended"; readonly code: number | null; readonly signal: string | null }

/**
 * What a job process says, one letter at a time, in order; "Ended" last, once its channel is closed (after its
 * last message: "exit" may come before it).
 */
const mailbox = (child: ChildProcess) => {
  const arrived: Array<Letter> = []
  let waiting: ((letter: Letter) => void) | undefined
  const deliver = (letter: Letter) => {
    const waiter = waiting
    waiting = undefined
    if (waiter === undefined) arrived.push(letter)
    else waiter(letter)
  }
  child.on("message", (message) => deliver(message as ImageJobMessage))
  child.once("close", (code, signal) => deliver({ _tag: "Ended", code, signal }))
  child.once("error", () => deliver({ _tag: "Ended", code: null, signal: null }))
  return Effect.async<Letter>((resume) => {
    const next = arrived.shift()
    if (next !== undefined) resume(Effect.succeed(next))
    else waiting = (letter) => resume(Effect.succeed(letter))
  })
}

/**
 * Images decoded and written again in processes of their own (ImageJob.ts), each ended after its image: at most
 * `processes` at once, and at most `maxPixels` pixels decoding at once among them, each image counted by the
 * size its header gives, so that the memory decoding takes is bounded by pixels, not by uploads. A process the
 * kernel ends for memory (it is the first it chooses) refuses its image; the server goes on.
 */
export const makeImageJobs = (options: { readonly processes: number; readonly maxPixels: number }) =>
  Effect.gen(function*() {
    const processes = yield* makeFifoLimiter(options.processes)
    const pixels = yield* Effect.makeSemaphore(options.maxPixels)

    const answerOf = (letter: Letter, request: ImageJobRequest): Effect.Effect<Prepared, ImageRefused> => {
      switch (letter._tag) {
        case "Prepared":
          return Effect.succeed({
            path: letter.path,
            contentType: letter.format === "jpg" ? "image/jpeg" : `image/${letter.format}`,
            extension: letter.format,
            size: letter.size,
            width: letter.width,
            height: letter.height,
            thumbnailPath: request.thumbnail,
            thumbnailSize: letter.thumbnailSize
          })
        case "Refused":
          return Effect.fail(new ImageRefused({ reason: letter.reason }))
        case "Measured":
          return Effect.dieMessage("An image job measured its image twice")
        case "Ended":
          return Effect.zipRight(
            Effect.logWarning("An image job ended without an answer", { code: letter.code, signal: letter.signal }),
            Effect.fail(new ImageRefused({ reason: letter.signal === "SIGKILL" ? "out_of_memory" : "unreadable" }))
          )
      }
    }

    const start = Effect.flatMap(ImageJobModule.load, ({ imageJobScript }) =>
      Effect.acquireRelease(
        // It needs none of the server's settings (nor its secrets): the request says all.
        Effect.sync(() => fork(imageJobScript, [], { execArgv: [], env: jobEnv, stdio: ["ignore", "ignore", "inherit", "ipc"], serialization: "json" })),
        (child) => Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"))
      ))

    /** The stored copy of the image at `job.input` and its thumbnail, written where the job says. */
    return (job: Omit<ImageJobRequest, "maxPixels">): Effect.Effect<Prepared, ImageRefused> =>
      processes(Effect.scoped(Effect.gen(function*() {
        const request: ImageJobRequest = { ...job, maxPixels: options.maxPixels }
        const child = yield* start
        const next = mailbox(child)
        child.send(request)
        const first = yield* next
        if (first._tag !== "Measured") return yield* answerOf(first, request)
        // An image larger than the bound was refused by the job: what it measured fits.
        return yield* pixels.withPermits(Math.min(Math.max(first.pixels, 1), options.maxPixels))(
          Effect.flatMap(Effect.sync(() => child.send("go")), () => Effect.flatMap(next, (letter) => answerOf(letter, request)))
        )
      })))
  })

export type ImageJobs = Effect.Effect.Success<ReturnType<typeof makeImageJobs>>
