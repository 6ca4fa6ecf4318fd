import { HttpClientError } from "@effect/platform"
import { defaultBaseUrl, normalizeBaseUrl, Postline, type PostlineOptions } from "@postline/sdk"
import { Data, Effect, Option, Predicate } from "effect"
import type { ServerOptions } from "./CommonOptions.js"
import { ServerUnreachable } from "./Errors.js"
import { exitCodeOf } from "./ExitCodes.js"
import { failureOf, Output } from "./Output.js"

/** A command ended in failure, which it has reported in its output mode: the process exits with `exitCode`. */
export class Reported extends Data.TaggedError("Reported")<{ readonly exitCode: number }> {}

/** Reports a command's failure in its output mode, once, and ends it with its failure's exit status. */
export const reported = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  body.pipe(
    Effect.catchAll((error) => {
      const failure = failureOf(error)
      return Effect.zipRight(
        Effect.flatMap(Output, (output) => output.failure(failure)),
        Effect.fail(new Reported({ exitCode: exitCodeOf(failure) }))
      )
    })
  )

/** Runs a command's body in its output mode, with no server (login makes its own calls). */
export const offline = (options: Pick<ServerOptions, "json">) => <A, E, R>(body: Effect.Effect<A, E, R>) =>
  body.pipe(reported, Effect.provide(Output.Default(options.json)))

/** The server `--url` names, when it names one: the SDK looks further (POSTLINE_URL, the stored login's) otherwise. */
export const serverAt = (url: Option.Option<string>): PostlineOptions =>
  Option.match(url, { onNone: () => ({}), onSome: (baseUrl) => ({ baseUrl }) })

/**
 * A request that found no server at all (the connection refused, the host unknown): the client's own error, with
 * no description, unlike a timeout, a refresh that failed or a publish in doubt, which the SDK describes.
 */
const isUnreachable = (error: unknown): error is HttpClientError.RequestError =>
  HttpClientError.isHttpClientError(error) && error._tag === "RequestError" && error.reason === "Transport" &&
  error.description === undefined

/** What the system said of the connection, `connect ECONNREFUSED 127.0.0.1:3000`, from fetch's nested causes. */
const systemReason = (cause: unknown): string | undefined => {
  if (!Predicate.hasProperty(cause, "message") || typeof cause.message !== "string") return undefined
  const deeper = Predicate.hasProperty(cause, "cause") ? systemReason(cause.cause) : undefined
  return deeper ?? (Predicate.hasProperty(cause, "code") ? cause.message : undefined)
}

/**
 * A request to `baseUrl` that found no server becomes ServerUnreachable, which says which server, where its
 * address came from (`url` is --url's), and how to name another; other failures stay as they are.
 */
export const namingUnreachableServer = (url: Option.Option<string>, baseUrl: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.catchAll(effect, (error): Effect.Effect<never, E | ServerUnreachable> => {
    if (!isUnreachable(error)) return Effect.fail(error)
    const reason = systemReason(error.cause)
    const from = Option.isSome(url)
      ? "given with --url"
      : (process.env.POSTLINE_URL ?? "") !== ""
      ? "from POSTLINE_URL"
      : baseUrl === normalizeBaseUrl(defaultBaseUrl)
      ? "the default: no --url, POSTLINE_URL or login names one"
      : "your login's"
    return Effect.fail(
      new ServerUnreachable({
        message: `Could not reach the Postline server at ${baseUrl} (${from})${reason === undefined ? "" : `: ${reason}`}. ` +
          "Check that it runs there, or name the server with --url <address> or the POSTLINE_URL environment variable"
      })
    )
  })

/**
 * Runs a command's body against the server: `--url`, else POSTLINE_URL, else the stored login's, with the
 * credentials the SDK finds (POSTLINE_API_KEY, POSTLINE_TOKEN, else the stored login, refreshed as needed), and
 * the SDK's other options the command gives.
 */
export const online = (options: ServerOptions, sdk: PostlineOptions = {}) => <A, E, R>(body: Effect.Effect<A, E, R>) =>
  body.pipe(
    (effect) => Effect.flatMap(Postline, ({ baseUrl }) => namingUnreachableServer(options.url, baseUrl)(effect)),
    Effect.provide(Postline.layerNode({ ...sdk, ...serverAt(options.url) })),
    offline(options)
  )
