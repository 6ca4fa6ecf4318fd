import { HttpClient, HttpClientError, type HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { Duration, Effect, Option, Schedule } from "effect"

export interface RetryOptions {
  /** Tries of one request in all, the first included; default 4. 1 turns retries off. */
  readonly maxAttempts?: number | undefined
  /** How long one try may take to answer before it counts as failed; default 30 seconds. */
  readonly timeout?: Duration.DurationInput | undefined
  /** The first backoff; each next one doubles, with ±20% jitter; default 500 ms. */
  readonly baseDelay?: Duration.DurationInput | undefined
  /** The longest backoff; default 10 seconds. */
  readonly maxDelay?: Duration.DurationInput | undefined
  /** The longest `Retry-After` that is waited for; a 429 asking for longer is answered at once. Default 60 seconds. */
  readonly maxRetryAfter?: Duration.DurationInput | undefined
}

const repeatableMethods: ReadonlySet<string> = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"])

export const idempotencyKeyHeader = "idempotency-key"
const replayedHeader = "idempotent-replayed"

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

/** An answer worth asking again for, held (its body read) until the next try or the last. */
class RetryableAnswer {
  readonly _tag = "RetryableAnswer"
  constructor(
    readonly response: HttpClientResponse.HttpClientResponse,
    /** The server's `Retry-After`, when it asked for a wait. */
    readonly retryAfter: Option.Option<Duration.Duration>,
    /** A `Retry-After` longer than the client waits for: answered as it is. */
    readonly final: boolean
  ) {}
}

/** A response whose body has been read, so that the connection is free and the response can still be decoded. */
const buffered = (request: HttpClientRequest.HttpClientRequest, response: HttpClientResponse.HttpClientResponse) =>
  Effect.map(
    Effect.orElseSucceed(response.arrayBuffer, () => new ArrayBuffer(0)),
    (body) =>
      HttpClientResponse.fromWeb(
        request,
        new Response(body.byteLength === 0 ? null : body, { status: response.status, headers: response.headers })
      )
  )

/**
 * Retries, as an `HttpClient` transform: a 429 whatever the request (it was not processed), waiting its
 * `Retry-After` when it gives one; a 5xx, a transport error or a try that outlasts `timeout` only for requests
 * that are repeatable (see `isRepeatable`); and a 409 to a repetition of a keyed request, which the server gives
 * while the key's first request still runs. Between tries: exponential backoff with jitter, at most `maxAttempts`
 * tries. When they run out, the last answer is returned as it is (and decoded as the API's error) or the last
 * error failed with.
 */
export const withRetries = (options: RetryOptions = {}) => {
  const maxAttempts = Math.max(1, Math.floor(options.maxAttempts ?? 4))
  const timeout = Duration.decode(options.timeout ?? Duration.seconds(30))
  const baseDelay = Duration.decode(options.baseDelay ?? Duration.millis(500))
  const maxDelay = Duration.decode(options.maxDelay ?? Duration.seconds(10))
  const maxRetryAfter = Duration.decode(options.maxRetryAfter ?? Duration.seconds(60))

  return <E, R>(client: HttpClient.HttpClient.With<E, R>): HttpClient.HttpClient.With<E | HttpClientError.RequestError, R> =>
    HttpClient.transform(client, (effect, request) => {
      const repeatable = isRepeatable(request)
      const keyed = request.headers[idempotencyKeyHeader] !== undefined
      let tries = 0

      const classify = (response: HttpClientResponse.HttpClientResponse) => {
        const status = response.status
        if (status === 429) {
          const retryAfter = parseRetryAfter(response.headers["retry-after"])
          const final = Option.exists(retryAfter, (wait) => Duration.greaterThan(wait, maxRetryAfter))
          return Effect.flatMap(buffered(request, response), (held) => Effect.fail(new RetryableAnswer(held, retryAfter, final)))
        }
        const retryable = repeatable && status >= 500 ||
          keyed && tries > 1 && status === 409 && response.headers[replayedHeader] === undefined
        if (!retryable) return Effect.succeed(response)
        return Effect.flatMap(buffered(request, response), (held) => Effect.fail(new RetryableAnswer(held, Option.none(), false)))
      }

      const attempt = Effect.suspend(() => {
        tries++
        return Effect.flatMap(effect, classify)
      }).pipe(
        Effect.timeoutFail({
          duration: timeout,
          onTimeout: () =>
            new HttpClientError.RequestError({
              request,
              reason: "Transport",
              description: `no answer within ${Duration.format(timeout)}`
            })
        })
      )

      const shouldRetry = (error: unknown) =>
        error instanceof RetryableAnswer
          ? !error.final
          : repeatable && HttpClientError.isHttpClientError(error) && error._tag === "RequestError" &&
            error.reason === "Transport"

      const policy = Schedule.exponential(baseDelay, 2).pipe(
        Schedule.either(Schedule.spaced(maxDelay)),
        Schedule.jittered,
        Schedule.intersect(Schedule.recurs(maxAttempts - 1)),
        Schedule.passthrough,
        Schedule.whileInput(shouldRetry),
        Schedule.modifyDelay((error: unknown, delay) =>
          error instanceof RetryableAnswer && Option.isSome(error.retryAfter) ? error.retryAfter.value : delay
        )
      )

      return attempt.pipe(
        Effect.retry(policy),
        Effect.catchIf(
          (error): error is RetryableAnswer => error instanceof RetryableAnswer,
          (answer) => Effect.succeed(answer.response)
        )
      ) as Effect.Effect<HttpClientResponse.HttpClientResponse, E | HttpClientError.RequestError, R>
    })
}
