import { Effect } from "effect"

/** An instant `seconds` from now, as the API takes it. */
export const inSeconds = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString()

/**
 * Reads until `done` holds, every 50 ms, for at most `seconds`; answers the last reading either way. The bound only
 * ends a wait for what never comes: a busy machine may take a minute for what takes a second alone.
 */
export const eventually = <A, E, R>(read: Effect.Effect<A, E, R>, done: (value: A) => boolean, seconds = 180) =>
  Effect.gen(function*() {
    const until = Date.now() + seconds * 1000
    for (;;) {
      const value = yield* read
      if (done(value) || Date.now() > until) return value
      yield* Effect.sleep("50 millis")
    }
  })
