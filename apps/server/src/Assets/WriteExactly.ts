import { BadRequest } from "@postline/domain"
import { Effect, Stream } from "effect"
import { open } from "node:fs/promises"

/**
 * Writes the bytes to a new file at `path` as they arrive, refusing (400) those that are not exactly `size`: a
 * presigned upload's PUT, whose length was declared. Only a chunk is held at a time. Bytes past `size` are read
 * and dropped, not written, until the body ends, as the edge does with a JSON body too large: a server that
 * closes while the client still sends resets the connection, and the client never reads the answer. The
 * request timeout bounds how long that takes.
 */
export const writeExactly = <E, R>(content: Stream.Stream<Uint8Array, E, R>, path: string, size: number) =>
  Effect.acquireUseRelease(
    Effect.promise(() => open(path, "wx", 0o600)),
    (file) =>
      Effect.gen(function*() {
        let received = 0
        const unreadable = () => new BadRequest({ message: "The body could not be read to its end", reason: "body_unreadable" })
        yield* Stream.runForEach(Stream.mapError(content, unreadable), (chunk) => {
          received += chunk.length
          return received > size ? Effect.void : Effect.promise(() => file.write(chunk))
        })
        if (received !== size) {
          return yield* new BadRequest({
            message: `The upload declared ${size} bytes; the body has ${received}: send exactly ${size}`,
            reason: "size_mismatch"
          })
        }
      }),
    (file) => Effect.promise(() => file.close())
  )
