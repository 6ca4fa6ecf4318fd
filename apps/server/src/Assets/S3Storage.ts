import {
  DeleteObjectCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client
} from "@aws-sdk/client-s3"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import { NodeStream } from "@effect/platform-node"
import { Effect, Layer, Option, Redacted, Stream } from "effect"
import { createReadStream, createWriteStream } from "node:fs"
import { stat } from "node:fs/promises"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { writeFileAtomically } from "./FileStorage.js"
import { MediaStorage, StorageError } from "./Storage.js"

export interface S3Settings {
  readonly bucket: string
  /** An S3-compatible server's URL; none for AWS itself. */
  readonly endpoint?: string | undefined
  readonly region: string
  readonly accessKeyId: Redacted.Redacted
  readonly secretAccessKey: Redacted.Redacted
  /** `endpoint/bucket/key` URLs instead of `bucket.endpoint/key`: what most S3-compatible servers want. */
  readonly forcePathStyle: boolean
}

const statusOf = (error: unknown) =>
  (error as { readonly $metadata?: { readonly httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode

// The SDK warns on the console when a streamed upload fails; the failure reaches the caller as a StorageError.
const quietLogger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} }

/** Media storage in an S3 bucket (AWS or an S3-compatible server): each object at its key. */
export const layerS3Storage = (settings: S3Settings): Layer.Layer<MediaStorage> =>
  Layer.scoped(
    MediaStorage,
    Effect.gen(function*() {
      const client = yield* Effect.acquireRelease(
        Effect.sync(() =>
          new S3Client({
            region: settings.region,
            ...(settings.endpoint !== undefined ? { endpoint: settings.endpoint } : {}),
            forcePathStyle: settings.forcePathStyle,
            credentials: {
              accessKeyId: Redacted.value(settings.accessKeyId),
              secretAccessKey: Redacted.value(settings.secretAccessKey)
            },
            // By default the SDK sends uploads aws-chunked with a trailing checksum (and puts a checksum of an
            // empty body in presigned URLs), which S3-compatible servers such as Swift's s3api refuse (501).
            requestChecksumCalculation: "WHEN_REQUIRED",
            responseChecksumValidation: "WHEN_REQUIRED",
            // A bucket that stops answering mid-request fails it after a minute without a byte, not never.
            requestHandler: { connectionTimeout: 5_000, requestTimeout: 60_000 },
            logger: quietLogger
          })
        ),
        (client) => Effect.sync(() => client.destroy())
      )
      const Bucket = settings.bucket

      const attempt = <A>(operation: string, key: string, f: (signal: AbortSignal) => Promise<A>) =>
        Effect.tryPromise({ try: f, catch: (cause) => new StorageError({ operation, key, cause }) })

      // The body of a GetObject, streamed; with the SDK's Node handler it is always a Readable.
      const bodyOf = (output: GetObjectCommandOutput) => {
        if (!(output.Body instanceof Readable)) throw new Error("the object store sent no readable body")
        return output.Body
      }

      return MediaStorage.of({
        kind: "s3",
        putFile: (key, path, contentType) =>
          attempt("store", key, async (abortSignal) => {
            // A stream with its length goes up as one plain PUT, never held in memory.
            const { size } = await stat(path)
            const body = createReadStream(path)
            try {
              await client.send(
                new PutObjectCommand({ Bucket, Key: key, Body: body, ContentLength: size, ContentType: contentType }),
                { abortSignal }
              )
            } finally {
              body.destroy()
            }
          }),
        size: (key) =>
          attempt("find the size of", key, (abortSignal) =>
            client.send(new HeadObjectCommand({ Bucket, Key: key }), { abortSignal }).then(
              (output) => Option.some(output.ContentLength ?? 0),
              (error) => statusOf(error) === 404 ? Option.none() : Promise.reject(error)
            )),
        read: (key, range) =>
          Stream.unwrap(Effect.map(
            attempt("read", key, (abortSignal) =>
              client.send(
                new GetObjectCommand({
                  Bucket,
                  Key: key,
                  ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {})
                }),
                { abortSignal }
              ).then(bodyOf)),
            (body) => NodeStream.fromReadable(() => body, (cause) => new StorageError({ operation: "read", key, cause }))
          )),
        copyToFile: (key, path) =>
          attempt("copy", key, async (abortSignal) => {
            const body = bodyOf(await client.send(new GetObjectCommand({ Bucket, Key: key }), { abortSignal }))
            try {
              await writeFileAtomically(path, (temporaryPath) => pipeline(body, createWriteStream(temporaryPath)))
            } finally {
              body.destroy() // frees the connection when the file could not even be started
            }
          }),
        list: (prefix) =>
          attempt("list", prefix, async (abortSignal) => {
            const keys: Array<string> = []
            let ContinuationToken: string | undefined
            do {
              const page = await client.send(new ListObjectsV2Command({ Bucket, Prefix: prefix, ContinuationToken }), { abortSignal })
              for (const { Key } of page.Contents ?? []) if (Key !== undefined) keys.push(Key)
              ContinuationToken = page.IsTruncated === true ? page.NextContinuationToken : undefined
            } while (ContinuationToken !== undefined)
            return keys
          }),
        // S3 answers 204 whether or not the object was there.
        remove: (key) =>
          attempt("remove", key, (abortSignal) => client.send(new DeleteObjectCommand({ Bucket, Key: key }), { abortSignal }))
            .pipe(Effect.asVoid),
        presignPut: (key, { contentLength, expiresInSeconds }) =>
          attempt("presign an upload to", key, () =>
            // The signature covers content-length: a PUT of any other length is refused.
            getSignedUrl(client, new PutObjectCommand({ Bucket, Key: key, ContentLength: contentLength }), {
              expiresIn: expiresInSeconds,
              signableHeaders: new Set(["content-length"])
            })).pipe(
              Effect.map((url) =>
                Option.some({ url, method: "PUT" as const, headers: { "content-length": String(contentLength) } })
              )
            )
      })
    })
  )
