import { Config, Effect, Layer, Option, type Scope, Stream } from "effect"
import { Agent, fetch as undiciFetch } from "undici"
import { serverVersion } from "../StartupLog.js"
import { hasUserInfo, makeAddressChecks, type Resolver, userInfoRefused } from "./AddressChecks.js"
import { causesOf, OutboundError, outboundErrorIn } from "./OutboundError.js"

export interface OutboundOptions {
  /**
   * Allow `http:` and addresses in loopback, private and other reserved ranges: for tests and for
   * installations whose providers live on their own network (`OUTBOUND_ALLOW_PRIVATE=true`).
   */
  readonly allowPrivate: boolean
  readonly connectTimeoutMillis?: number
  readonly totalTimeoutMillis?: number
  readonly maxResponseBytes?: number
  /** Resolves a host name to all its addresses; the system resolver (`dns.lookup`) by default. */
  readonly resolve?: Resolver
  /** Sent with every call, whatever the caller set; `Postline/<version>` by default (see `outboundUserAgent`). */
  readonly userAgent?: string
}

/** An answer, read whole. */
export interface OutboundResponse {
  readonly status: number
  readonly statusText: string
  readonly headers: Headers
  readonly body: Uint8Array
}

/** An answer whose body is read as it arrives, for one larger than any cap worth holding (a media import). */
export interface OutboundStream {
  readonly status: number
  readonly headers: Headers
  /** The body; the call's total timeout runs until it ends. */
  readonly body: Stream.Stream<Uint8Array, OutboundError>
}

/**
 * How Postline names itself to the hosts it calls, so that their operators can tell who calls and where to
 * reach the server's own: `Postline/<version> (+<PUBLIC_URL>)`, without the address when PUBLIC_URL is not set.
 */
export const outboundUserAgent = Config.option(Config.url("PUBLIC_URL")).pipe(
  Config.map((publicUrl) =>
    Option.match(publicUrl, {
      onNone: () => `Postline/${serverVersion}`,
      onSome: (url) => `Postline/${serverVersion} (+${url.href.replace(/\/+$/, "")})`
    })
  )
)

const redirectStatuses = new Set([301, 302, 303, 307, 308])

// Every form fetch takes (a string, a URL, a Request of another fetch implementation), made one.
const toRequest = (input: string | URL | Request, init?: RequestInit): Request => {
  const url = typeof input === "string" ? URL.parse(input) : input instanceof URL ? input : null
  if (url !== null && hasUserInfo(url)) throw userInfoRefused(url)
  try {
    return new Request(input, init)
  } catch {
    throw new OutboundError({ reason: "invalid_url", message: "Not an absolute URL" })
  }
}


/**
 * Calls to addresses that users choose (Mastodon instances, Bluesky services, webhooks) go through
 * here. Only `https:` is allowed; each call has a connect timeout, a total timeout (reading the body
 * included) and a cap on the answer's size; redirects are not followed. A host name is resolved once
 * per connection, every address it resolves to is checked, and the connection goes to the checked
 * addresses (undici's `connect.lookup`), so a name that answers differently the second time (DNS
 * rebinding) cannot lead to an internal address. Literal IP addresses are checked before each call.
 */
export class Outbound extends Effect.Service<Outbound>()("Outbound", {
  scoped: (options: OutboundOptions) =>
    Effect.gen(function*() {
      const { check, checkUrl, lookup } = makeAddressChecks(options.allowPrivate, options.resolve)
      const totalTimeoutMillis = options.totalTimeoutMillis ?? 15_000
      const maxResponseBytes = options.maxResponseBytes ?? 1024 * 1024
      const userAgent = options.userAgent ?? `Postline/${serverVersion}`

      const agent = yield* Effect.acquireRelease(
        Effect.sync(() => new Agent({ connect: { timeout: options.connectTimeoutMillis ?? 5_000, lookup } })),
        (agent) => Effect.promise(() => agent.close())
      )

      const readCapped = async (response: Response, host: string): Promise<Uint8Array> => {
        // Made only when thrown: an error captures its stack, which costs every call that reads an answer.
        const tooLarge = () =>
          new OutboundError({ reason: "too_large", message: `${host} answered more than ${maxResponseBytes} bytes` })
        if (Number(response.headers.get("content-length") ?? 0) > maxResponseBytes) {
          await response.body?.cancel()
          throw tooLarge()
        }
        const chunks: Array<Uint8Array> = []
        let size = 0
        for await (const chunk of response.body ?? []) {
          size += chunk.byteLength
          // Leaving the loop cancels the stream.
          if (size > maxResponseBytes) throw tooLarge()
          chunks.push(chunk)
        }
        return Buffer.concat(chunks)
      }

      // A thrown OutboundError as it was; anything else named after the host only (the caller's own abort passes as it came).
      const failureOf = (error: unknown, url: URL, timedOut: boolean, aborted: boolean): unknown => {
        const known = outboundErrorIn(error)
        if (known) return known
        if (timedOut) return new OutboundError({ reason: "timeout", message: `${url.host} did not answer within ${totalTimeoutMillis} ms` })
        if (aborted) return error
        const code = causesOf(error).map((cause) => (cause as { code?: unknown }).code).find((code) => typeof code === "string")
        return new OutboundError({
          reason: typeof code === "string" && code.includes("TIMEOUT") ? "timeout" : "network",
          message: `${url.host} could not be reached (${code ?? (error as Error).message})`
        })
      }

      /**
       * The call through the checked agent, its answer's body unread; a redirect is refused. A form (a provider's
       * media upload) is streamed as it is read from its files, never held whole: it goes chunked; any other body
       * is small, and goes with its length.
       */
      const dispatch = async (url: URL, request: Request, signal: AbortSignal): Promise<Response> => {
        const streamed = request.body !== null && (request.headers.get("content-type") ?? "").startsWith("multipart/form-data")
        const headers = new Headers(request.headers)
        headers.set("user-agent", userAgent)
        const response = await undiciFetch(url, {
          method: request.method,
          headers: [...headers],
          body: request.body === null ? null : streamed ? request.body : Buffer.from(await request.arrayBuffer()),
          ...(streamed ? { duplex: "half" as const } : {}),
          redirect: "manual",
          dispatcher: agent,
          signal
        }) as unknown as Response
        if (redirectStatuses.has(response.status)) {
          await response.body?.cancel()
          throw new OutboundError({ reason: "redirect", message: `${url.host} answered a redirect (${response.status}), which is not followed` })
        }
        return response
      }

      const send = async (input: string | URL | Request, init?: RequestInit): Promise<OutboundResponse> => {
        const request = toRequest(input, init)
        const url = checkUrl(request.url)
        // A timer cleared once the call ends: `AbortSignal.timeout` would hold each call's signals until it fires,
        // thousands of them in a burst of scheduled sends.
        const timeout = new AbortController()
        const timer = setTimeout(() => timeout.abort(), totalTimeoutMillis)
        try {
          const response = await dispatch(url, request, AbortSignal.any([request.signal, timeout.signal]))
          const body = await readCapped(response, url.host)
          return { status: response.status, statusText: response.statusText, headers: response.headers, body }
        } catch (error) {
          throw failureOf(error, url, timeout.signal.aborted, request.signal.aborted)
        } finally {
          clearTimeout(timer)
        }
      }

      const asOutboundError = (error: unknown) =>
        error instanceof OutboundError ? error : new OutboundError({ reason: "network", message: String(error) })

      return {
        /**
         * A `fetch` for client libraries (@atproto/api): the same checks, and the answer is read whole
         * (within the size cap) before it is handed back. Failures reject with an `OutboundError`.
         */
        fetch: async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
          const { body, headers, status, statusText } = await send(input, init)
          const nullBody = status === 204 || status === 205 || status === 304
          return new Response(nullBody ? null : body, { status, statusText, headers: [...headers] })
        },
        /** One call; interrupting the effect aborts it. */
        request: (url: string, init: RequestInit = {}): Effect.Effect<OutboundResponse, OutboundError> =>
          Effect.tryPromise({ try: (signal) => send(url, { ...init, signal }), catch: asOutboundError }),
        /**
         * One GET whose body streams instead of being read whole: the same checks and timeouts, no size cap (the
         * caller bounds what it reads). Closing the scope ends the call, read to its end or not.
         */
        stream: (url: string): Effect.Effect<OutboundStream, OutboundError, Scope.Scope> =>
          Effect.gen(function*() {
            const target = yield* Effect.try({ try: () => checkUrl(url), catch: asOutboundError })
            const timeout = yield* Effect.acquireRelease(
              Effect.sync(() => {
                const controller = new AbortController()
                return { controller, timer: setTimeout(() => controller.abort(), totalTimeoutMillis) }
              }),
              ({ controller, timer }) => Effect.sync(() => (clearTimeout(timer), controller.abort()))
            )
            const failure = (error: unknown) =>
              asOutboundError(failureOf(error, target, timeout.controller.signal.aborted, false))
            const response = yield* Effect.tryPromise({
              try: (signal) => dispatch(target, new Request(target), AbortSignal.any([signal, timeout.controller.signal])),
              catch: failure
            })
            return {
              status: response.status,
              headers: response.headers,
              body: response.body === null ? Stream.empty : Stream.fromAsyncIterable(response.body, failure)
            } satisfies OutboundStream
          }),
        /** Whether a call to this address would be allowed, resolving its host name as a call would. */
        check: (url: string): Effect.Effect<void, OutboundError> =>
          Effect.tryPromise({ try: () => check(url), catch: asOutboundError })
      } as const
    })
}) {}

/**
 * An outbound client as configured, with its own total timeout: `OUTBOUND_ALLOW_PRIVATE=true` allows private
 * addresses and `http:`; calls name the server by `outboundUserAgent`.
 */
export const configuredOutbound = (totalTimeoutMillis: number) =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      const allowPrivate = yield* Config.boolean("OUTBOUND_ALLOW_PRIVATE").pipe(Config.withDefault(false))
      const userAgent = yield* outboundUserAgent
      return Outbound.Default({ allowPrivate, totalTimeoutMillis, userAgent })
    })
  )
