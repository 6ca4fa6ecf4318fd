import { Postline, type PostlineOptions } from "@postline/sdk"
import { Data, Effect, Option } from "effect"
import type { ServerOptions } from "./CommonOptions.js"
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
        Effect.fail(new Reported({ exitCode: exitCodeOf(failure._tag) }))
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
 * Runs a command's body against the server: `--url`, else POSTLINE_URL, else the stored login's, with the
 * credentials the SDK finds (POSTLINE_API_KEY, POSTLINE_TOKEN, else the stored login, refreshed as needed), and
 * the SDK's other options the command gives.
 */
export const online = (options: ServerOptions, sdk: PostlineOptions = {}) => <A, E, R>(body: Effect.Effect<A, E, R>) =>
  body.pipe(
    Effect.provide(Postline.layerNode({ ...sdk, ...serverAt(options.url) })),
    offline(options)
  )
