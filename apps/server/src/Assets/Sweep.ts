import { Config, Duration, Effect, Layer, Schedule } from "effect"
import { StorageGarbage } from "./Garbage.js"
import { MediaStorage } from "./Storage.js"

// Keys a sweep takes at once: a backlog is worked through sweep after sweep, without waiting for the next tick.
const sweepBatch = 100

/**
 * Removes from storage, every MEDIA_SWEEP_SECONDS (60), the objects of deleted assets and of uploads that
 * never saved theirs. Each process sweeps; they take different keys.
 */
export const StorageSweepLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const seconds = yield* Config.integer("MEDIA_SWEEP_SECONDS").pipe(
      Config.withDefault(60),
      Config.validate({ message: "MEDIA_SWEEP_SECONDS must be a positive number of seconds", validation: (n) => n > 0 })
    )
    const garbage = yield* StorageGarbage
    const storage = yield* MediaStorage
    const sweepAll: Effect.Effect<void> = Effect.flatMap(
      garbage.sweep(sweepBatch, storage.remove),
      (removed) => removed === sweepBatch ? sweepAll : Effect.void
    )
    yield* sweepAll.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("The media storage sweep failed; it runs again later", cause)),
      Effect.schedule(Schedule.spaced(Duration.seconds(seconds))),
      Effect.forkScoped
    )
  })
).pipe(Layer.provide(StorageGarbage.Default))
