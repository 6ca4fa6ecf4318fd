import { Effect, Redacted } from "effect"
import { open } from "node:fs/promises"
import * as Readline from "node:readline"
import { FileUnreadable, UsageError } from "./Errors.js"

/**
 * The text of a file of at most `maxBytes` bytes, read in chunks until its end or one byte past the bound and
 * never further, so that a huge file is refused (a UsageError) instead of exhausting memory. It reads from the
 * current position, so that a pipe (`--file /dev/stdin`) works as well as a file.
 */
export const readTextAtMost = (path: string, maxBytes: number) =>
  Effect.acquireUseRelease(
    Effect.tryPromise({ try: () => open(path, "r"), catch: (error) => unreadable(path, error) }),
    (handle) =>
      Effect.gen(function*() {
        const buffer = Buffer.alloc(maxBytes + 1)
        let filled = 0
        while (filled < buffer.length) {
          const { bytesRead } = yield* Effect.tryPromise({
            try: () => handle.read(buffer, filled, buffer.length - filled, null),
            catch: (error) => unreadable(path, error)
          })
          if (bytesRead === 0) break
          filled += bytesRead
        }
        if (filled > maxBytes) {
          return yield* new UsageError({ message: `${path} is longer than ${maxBytes} bytes` })
        }
        return buffer.toString("utf8", 0, filled)
      }),
    (handle) => Effect.promise(() => handle.close())
  )

const unreadable = (path: string, error: unknown) =>
  new FileUnreadable({ message: `Cannot read ${path}: ${error instanceof Error ? error.message : String(error)}` })

/**
 * The first line of standard input (a pipe or a file, not a terminal), without its line break: taken as soon as
 * it arrives, so that a writer that keeps the pipe open is not waited for, and refused (a UsageError) past
 * `maxBytes` without a line break, so that nothing more is buffered. Input that ends without a line break is
 * its one line.
 */
export const firstLineOfInput = (what: string, maxBytes: number) =>
  Effect.async<Redacted.Redacted, UsageError>((resume) => {
    const lines = Readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
    let received = 0
    let done = false
    const finish = (outcome: Effect.Effect<Redacted.Redacted, UsageError>) => {
      if (done) return
      done = true
      process.stdin.off("data", count)
      lines.close()
      // Nothing more is read: standard input no longer keeps the process alive.
      process.stdin.destroy()
      resume(outcome)
    }
    const tooLong = () => new UsageError({ message: `${what}: the first line of standard input is longer than ${maxBytes} bytes` })
    // Readline buffers a line until its break: counting what arrives stops a line that never ends. Readline
    // listens first, so a chunk that holds the first line's break has ended the wait before it is counted.
    const count = (chunk: Buffer) => {
      received += chunk.length
      if (received > maxBytes) finish(Effect.fail(tooLong()))
    }
    lines.once("line", (line) =>
      finish(Buffer.byteLength(line) > maxBytes ? Effect.fail(tooLong()) : Effect.succeed(Redacted.make(line))))
    lines.once("close", () => finish(Effect.fail(new UsageError({ message: `${what}: standard input is empty` }))))
    process.stdin.on("data", count)
    return Effect.sync(() => finish(Effect.fail(new UsageError({ message: `${what}: interrupted` }))))
  })
