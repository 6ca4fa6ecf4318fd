import {
  type HttpBody,
  HttpApiClient,
  HttpClient,
  HttpClientError,
  type HttpClientRequest,
  HttpClientResponse
} from "@effect/platform"
import { PostlineApi, type PostlineClient, replayedHeader } from "@postline/domain"
import { Clock, Duration, Effect, Either, Option, Random, Schema } from "effect"
import { PublishInDoubt } from "./Errors.js"

export interface RetryOptions {
  /** Tries of a request that fails (see `withRetries`), the first included; default 4. 1 turns these retries off. */
  readonly maxAttempts?: number | undefined
  /** How long one try may take to answer before it counts as failed; default 30 seconds. */
  readonly timeout?: Duration.DurationInput | undefined
  /**
   * The same for a request with an `Idempotency-Key` (a publish or a schedule); default 2 minutes, well above the
   * server's own limit on a publish (`PUBLISH_TIMEOUT_SECONDS`, 30 by default), so that a slow publish is waited for.
   */
  readonly keyedTimeout?: Duration.DurationInput | undefined
  /**
   * The same for a request that carries a file: a multipart form (an upload to the media library), a stream, or
   * more than 1 MiB of bytes (a presigned upload's PUT); default 10 minutes.
   */
  readonly uploadTimeout?: Duration.DurationInput | undefined
  /**
   * How long a keyed request whose first try still runs on the server (it answers 409 "still being processed") is
   * asked again, with backoff, before the call fails with `PublishInDoubt`; default 2 minutes. These tries do not
   * count against `maxAttempts`.
   */
  readonly inDoubtFor?: Duration.DurationInput | undefined
  /** The first backoff; each next one doubles, with ±20% jitter; default 500 ms. */
  readonly baseDelay?: Duration.DurationInput | undefined
  /** The longest backoff; default 10 seconds. */
  readonly maxDelay?: Duration.DurationInput | undefined
  /** The longest `Retry-After` that is waited for; a 429 asking for longer is answered at once. Default 60 seconds. */
  readonly maxRetryAfter?: Duration.DurationInput | undefined
}

const repeatableMethods: ReadonlySet<string> = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"])

export const idempotencyKeyHeader = "idempotency-key"

/**
 * Whether sending `request` twice does no more than sending it once: an idempotent method, or a request that
 * carries an `Idempotency-Key` (the server answers its repetition with the first answer).
 */
export const isRepeatable = (request: HttpClientRequest.HttpClientRequest): boolean =>
  repeatableMethods.has(request.method) || request.headers[idempotencyKeyHeader] !== undefined

/**
 * `Retry-After` as a wait: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); none when absent or unreadable.
 */
export const parseRetryAfter = (value: string | undefined, now: number = Date.now()): Option.Option<Duration.Duration> => {
  const text = value?.trim()
  if (text === undefined || text === "") return Option.none()
  if (/^\d+$/.test(text)) return Option.some(Duration.seconds(Number(text)))
  const date = Date.parse(text)
  return Number.isNaN(date) ? Option.none() : Option.some(Duration.millis(Math.max(0, date - now)))
}

const largeBodyBytes = 1024 * 1024

const carriesFile = (body: HttpBody.HttpBody) =>
  body._tag === "FormData" || body._tag === "Stream" || body._tag === "Uint8Array" && body.body.length > largeBodyBytes

/**
 * The server's answer to a key whose first request still runs (apps/server's Idempotency service): a 409 that is
 * not a replay, whose reason says so (a server older than reasons says so in its message). A replayed 409 is the
 * first request's own answer.
 */
const StillRunning = Schema.parseJson(Schema.Union(
  Schema.Struct({ _tag: Schema.Literal("Conflict"), reason: Schema.Literal("idempotency_key_in_progress") }),
  Schema.Struct({
    _tag: Schema.Literal("Conflict"),
    message: Schema.String.pipe(Schema.filter((message) => message.includes("still being processed")))
  })
))
const decodeStillRunning = Schema.decodeUnknownOption(StillRunning)

/** What became of one try. */
type Verdict =
  | { readonly _tag: "Answer"; readonly response: HttpClientResponse.HttpClientResponse }
  /** Worth asking again, after the server's `Retry-After` when it gave one; the answer when the tries run out. */
  | {
    readonly _tag: "Again"
    readonly response: HttpClientResponse.HttpClientResponse
    readonly retryAfter: Option.Option<Duration.Duration>
  }
  /** The first request with this key still runs on the server. */
  | { readonly _tag: "Running"; readonly idempotencyKey: string }

/** A response whose body has been read, so that the connection is free and the response can still be decoded. */
const buffered = (request: HttpClientRequest.HttpClientRequest, response: HttpClientResponse.HttpClientResponse) =>
  Effect.map(
    Effect.orElseSucceed(response.arrayBuffer, () => new ArrayBuffer(0)),
    (body) => ({
      body,
      response: HttpClientResponse.fromWeb(
        request,
        new Response(body.byteLength === 0 ? null : body, { status: response.status, headers: response.headers })
      )
    })
  )

/**
 * Retries, as an `HttpClient` transform: a 429 whatever the request (it was not processed), waiting its
 * `Retry-After` when it gives one; a 5xx, a transport error or a try that outlasts its timeout only for requests
 * that are repeatable (see `isRepeatable`). Between tries: exponential backoff with jitter, at most `maxAttempts`
 * tries; when they run out, the last answer is returned as it is (and decoded as the API's error) or the last error
 * failed with. A keyed request whose first try still runs on the server (409, "still being processed", after a try
 * that timed out, say) is asked again for `inDoubtFor`, then fails as a `RequestError` whose cause is
 * `PublishInDoubt`.
 */
export const withRetries = (options: RetryOptions = {}) => {
  const maxAttempts = Math.max(1, Math.floor(options.maxAttempts ?? 4))
  const timeout = Duration.decode(options.timeout ?? Duration.seconds(30))
  const keyedTimeout = Duration.decode(options.keyedTimeout ?? Duration.minutes(2))
  const uploadTimeout = Duration.decode(options.uploadTimeout ?? Duration.minutes(10))
  const inDoubtFor = Duration.toMillis(options.inDoubtFor ?? Duration.minutes(2))
  const baseDelay = Duration.toMillis(options.baseDelay ?? Duration.millis(500))
  const maxDelay = Duration.toMillis(options.maxDelay ?? Duration.seconds(10))
  const maxRetryAfter = Duration.decode(options.maxRetryAfter ?? Duration.seconds(60))

  /**
   * The wait before the `retry`th retry: `baseDelay` doubled each time, at most `maxDelay`, ±20%. Whole
   * milliseconds, as clocks count them: a clock that adds a fraction too small to change its time never gets there.
   */
  const backoff = (retry: number) =>
    Effect.map(
      Random.nextRange(0.8, 1.2),
      (jitter) => Duration.millis(Math.max(1, Math.round(Math.min(maxDelay, baseDelay * 2 ** (retry - 1)) * jitter)))
    )

  return <E, R>(client: HttpClient.HttpClient.With<E, R>): HttpClient.HttpClient.With<E | HttpClientError.RequestError, R> =>
    HttpClient.transform(client, (effect, request) => {
      const repeatable = isRepeatable(request)
      const key = request.headers[idempotencyKeyHeader]
      const tryTimeout = carriesFile(request.body) ? uploadTimeout : key !== undefined ? keyedTimeout : timeout

      const classify = (response: HttpClientResponse.HttpClientResponse): Effect.Effect<Verdict> => {
        const status = response.status
        if (status === 429) {
          const retryAfter = parseRetryAfter(response.headers["retry-after"])
          return Effect.map(buffered(request, response), ({ response: held }): Verdict =>
            Option.exists(retryAfter, (wait) => Duration.greaterThan(wait, maxRetryAfter))
              ? { _tag: "Answer", response: held }
              : { _tag: "Again", response: held, retryAfter })
        }
        if (repeatable && status >= 500) {
          return Effect.map(buffered(request, response), ({ response: held }): Verdict => ({
            _tag: "Again",
            response: held,
            retryAfter: Option.none()
          }))
        }
        if (key !== undefined && status === 409 && response.headers[replayedHeader] === undefined) {
          return Effect.map(buffered(request, response), ({ body, response: held }): Verdict =>
            Option.isSome(decodeStillRunning(new TextDecoder().decode(body)))
              ? { _tag: "Running", idempotencyKey: key }
              : { _tag: "Answer", response: held })
        }
        return Effect.succeed({ _tag: "Answer", response })
      }

      const attempt = effect.pipe(
        Effect.timeoutFail({
          duration: tryTimeout,
          onTimeout: () =>
            new HttpClientError.RequestError({
              request,
              reason: "Transport",
              description: `no answer within ${Duration.format(tryTimeout)}`
            })
        }),
        Effect.flatMap(classify)
      )

      const isRetryableError = (error: unknown) =>
        repeatable && HttpClientError.isHttpClientError(error) && error._tag === "RequestError" &&
        error.reason === "Transport"

      const inDoubt = (idempotencyKey: string) => {
        const message = "The server is still processing the request with this Idempotency-Key: it may still " +
          `complete. Repeat it with the same idempotency key (${idempotencyKey}) to learn its answer`
        return new HttpClientError.RequestError({
          request,
          reason: "Transport",
          cause: new PublishInDoubt({ idempotencyKey, message }),
          description: message
        })
      }

      /**
       * `tries`: the tries so far that count against `maxAttempts`; `sent`: all tries so far; `runningSince`:
       * when the server first said that the key's first request still runs.
       */
      const loop = (
        tries: number,
        sent: number,
        runningSince: number | undefined
      ): Effect.Effect<HttpClientResponse.HttpClientResponse, E | HttpClientError.RequestError, R> =>
        Effect.flatMap(Effect.either(attempt), (outcome) =>
          Effect.gen(function*() {
            if (Either.isLeft(outcome)) {
              if (!isRetryableError(outcome.left) || tries >= maxAttempts) return yield* Effect.fail(outcome.left)
              yield* Effect.sleep(yield* backoff(sent))
              return yield* loop(tries + 1, sent + 1, runningSince)
            }
            const verdict = outcome.right
            switch (verdict._tag) {
              case "Answer":
                return verdict.response
              case "Again": {
                if (tries >= maxAttempts) return verdict.response
                yield* Effect.sleep(Option.isSome(verdict.retryAfter) ? verdict.retryAfter.value : yield* backoff(sent))
                return yield* loop(tries + 1, sent + 1, runningSince)
              }
              case "Running": {
                const now = yield* Clock.currentTimeMillis
                const since = runningSince ?? now
                const left = Math.floor(inDoubtFor - (now - since))
                if (left <= 0) return yield* Effect.fail(inDoubt(verdict.idempotencyKey))
                yield* Effect.sleep(Duration.min(yield* backoff(sent), Duration.millis(left)))
                return yield* loop(tries, sent + 1, since)
              }
            }
          }))

      return loop(1, 1, undefined)
    })
}

/** A client of the API without a bearer, with retries: for the OAuth endpoints of the device login and logout. */
export const makePlainClient = (
  baseUrl: string,
  retry?: RetryOptions
): Effect.Effect<PostlineClient, never, HttpClient.HttpClient> =>
  Effect.flatMap(HttpClient.HttpClient, (http) => HttpApiClient.makeWith(PostlineApi, { httpClient: withRetries(retry)(http), baseUrl }))
