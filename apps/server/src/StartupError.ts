import { Cause, ConfigError, Data, Effect } from "effect"

/**
 * A start that cannot succeed until an operator changes something: the message says, in one line, what is
 * wrong and what to do. It is never retried (waiting will not fix it) and is logged as it is, at FATAL.
 */
export class StartupError extends Data.TaggedError("StartupError")<{ readonly message: string }> {}

// Errors that a layer had to wrap (the SQL client's acquire fails only with SqlError) keep theirs as `cause`.
const causeChain = (error: unknown): ReadonlyArray<unknown> => {
  const chain: Array<unknown> = []
  for (let current = error; current !== null && typeof current === "object" && chain.length < 5;) {
    chain.push(current)
    current = (current as { readonly cause?: unknown }).cause
  }
  return chain
}

const startupErrorIn = (cause: Cause.Cause<unknown>): StartupError | undefined => {
  const errors = [...Cause.failures(cause), ...Cause.defects(cause)].flatMap(causeChain)
  return errors.find((error): error is StartupError => error instanceof StartupError)
}

/**
 * The one FATAL line of a start that failed: a StartupError's message, an invalid setting's, or, for what
 * nobody foresaw, "The server could not start" and the whole cause. A stop signal is no failure.
 */
export const logStartFailure = (cause: Cause.Cause<unknown>): Effect.Effect<void> => {
  if (Cause.isInterruptedOnly(cause)) return Effect.void
  const startup = startupErrorIn(cause)
  if (startup) return Effect.logFatal(startup.message)
  const invalidSetting = [...Cause.failures(cause)].find(ConfigError.isConfigError)
  if (invalidSetting) return Effect.logFatal(`A setting is invalid: ${String(invalidSetting).replace(/^\((.*)\)$/s, "$1")}`)
  return Effect.logFatal("The server could not start", cause)
}
