import { Effect, Stream } from "effect"
import { createHash } from "node:crypto"
import { createReadStream } from "node:fs"

/** Hex SHA-256 of a stream's bytes, read as they come. */
export const sha256OfStream = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>) =>
  Effect.suspend(() => {
    const hash = createHash("sha256")
    return Stream.runForEach(bytes, (chunk) => Effect.sync(() => hash.update(chunk))).pipe(Effect.map(() => hash.digest("hex")))
  })

/** Hex SHA-256 of a local file, read as a stream. */
export const sha256OfFile = (path: string) =>
  Effect.promise(async () => {
    const hash = createHash("sha256")
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer)
    return hash.digest("hex")
  })
