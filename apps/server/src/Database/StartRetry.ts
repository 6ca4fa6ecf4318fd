import { Config, Duration, Effect, Layer, Schedule } from "effect"
import { StartupError } from "../StartupError.js"

export const StartRetryConfig = Config.integer("DATABASE_START_RETRY_SECONDS").pipe(
  Config.withDefault(60),
  Config.validate({ message: "DATABASE_START_RETRY_SECONDS must be 0 or more", validation: (seconds) => seconds >= 0 }),
  Config.map(Duration.seconds)
)

/** 0.5 s, 1 s, 2 s, 4 s, then every 5 s, for as long as `bound` allows. */
const backoff = (bound: Duration.Duration) =>
  Schedule.exponential("500 millis").pipe(
    Schedule.union(Schedule.spaced("5 seconds")),
    Schedule.upTo(bound)
  )

/**
 * Builds `layer` again after each failure, with a growing pause, until `bound` has passed;
 * each failed attempt is one log line. Every pause can be interrupted by a stop signal. A
 * StartupError (no such database, a refused password) ends it at once: waiting will not fix it.
 */
export const retryStart = <A, E extends { readonly message: string }, R>(
  layer: Layer.Layer<A, E, R>,
  bound: Duration.Duration
) =>
  Layer.suspend(() => {
    let attempt = 0
    const attempted = Layer.suspend(() => {
      attempt += 1
      return layer
    }).pipe(Layer.tapError((error) =>
      error instanceof StartupError ? Effect.void : Effect.logWarning("The database is not reachable yet").pipe(
        Effect.annotateLogs({ attempt, reason: error.message, retryingForSeconds: Duration.toSeconds(bound) })
      )
    ))
    return Layer.retry(attempted, Schedule.whileInput(backoff(bound), (error: E) => !(error instanceof StartupError)))
  })
