import { Effect } from "effect"

const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

const spin = (label: string) =>
  Effect.gen(function*() {
    const started = Date.now()
    for (let frame = 0;; frame++) {
      const seconds = Math.floor((Date.now() - started) / 1000)
      process.stderr.write(`\r${frames[frame % frames.length]} ${label} ${seconds}s`)
      yield* Effect.sleep("100 millis")
    }
  })

/**
 * A progress line on standard error while `effect` runs, erased when it ends; only on a terminal, where a
 * person watches a publish that waits for every account's provider. Scripts and pipes get nothing.
 */
export const withSpinner = (label: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  process.stderr.isTTY !== true
    ? effect
    : Effect.scoped(Effect.gen(function*() {
      // Finalizers run last first: the spinner stops, then its line is erased.
      yield* Effect.addFinalizer(() => Effect.sync(() => process.stderr.write("\r\u001b[2K")))
      yield* Effect.forkScoped(spin(label))
      return yield* effect
    }))
