import { Context, Data, type Effect, type Option, type Stream } from "effect"

/** A storage operation that failed: the object store or the disk did not do what was asked. */
export class StorageError extends Data.TaggedError("StorageError")<{
  readonly operation: string
  readonly key: string
  readonly cause: unknown
}> {
  override get message() {
    return `Media storage could not ${this.operation} ${this.key}`
  }
}

/** Bytes `start` to `end` of an object, both included (as in an HTTP Range). */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

/** Where an upload that bypasses Postline is sent: one PUT of exactly `contentLength` bytes with these headers. */
export interface PresignedPut {
  readonly url: string
  readonly method: "PUT"
  readonly headers: Readonly<Record<string, string>>
}

/**
 * Where assets' bytes live: a folder (`MEDIA_DIR`, by default `DATA_DIR/assets`) or an S3-compatible bucket
 * (`S3_BUCKET`). Keys are relative paths of `[a-z0-9/._-]` made by the server, never by a caller.
 */
export class MediaStorage extends Context.Tag("MediaStorage")<MediaStorage, {
  readonly kind: "filesystem" | "s3"
  /** Stores the local file at `path` under `key`, streamed; an existing object is replaced. */
  readonly putFile: (key: string, path: string, contentType: string) => Effect.Effect<void, StorageError>
  /** The object's size, or none when there is no such object. */
  readonly size: (key: string) => Effect.Effect<Option.Option<number>, StorageError>
  /** The object's bytes (or a range of them), streamed; fails when there is no such object. */
  readonly read: (key: string, range?: ByteRange) => Stream.Stream<Uint8Array, StorageError>
  /** Copies the object to the local file at `path`, streamed. */
  readonly copyToFile: (key: string, path: string) => Effect.Effect<void, StorageError>
  /** The keys of every object under `prefix` (which ends with a slash), in no order. */
  readonly list: (prefix: string) => Effect.Effect<ReadonlyArray<string>, StorageError>
  /** Removes the object; removing one that does not exist succeeds. */
  readonly remove: (key: string) => Effect.Effect<void, StorageError>
  /**
   * A URL a client may PUT exactly `contentLength` bytes to, under `key`, until `expiresInSeconds` pass: on S3 a
   * presigned URL whose signature covers the length; none on a folder, where Postline receives the upload itself.
   */
  readonly presignPut: (
    key: string,
    options: { readonly contentLength: number; readonly expiresInSeconds: number }
  ) => Effect.Effect<Option.Option<PresignedPut>, StorageError>
}>() {}
