import { Config, Duration, Effect, Layer, Schedule } from "effect"
import { StorageGarbage } from "./Garbage.js"
import { MediaStorage } from "./Storage.js"
import { UploadsRepo, uploadsPrefix } from "./UploadsRepo.js"

// Keys a sweep takes at once: a backlog is worked through sweep after sweep, without waiting for the next tick.
const sweepBatch = 100

/**
 * Removes from storage, every MEDIA_SWEEP_SECONDS (60), the objects of deleted assets and of uploads that
 * never saved theirs, and every object under `uploads/` that no upload can use any more: a presigned URL works
 * until it expires, and one PUT again after its upload was completed or refused would otherwise park bytes that
 * count against nothing. Each process sweeps; they take different keys.
 */
export const StorageSweepLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const seconds = yield* Config.integer("MEDIA_SWEEP_SECONDS").pipe(
      Config.withDefault(60),
      Config.validate({ message: "MEDIA_SWEEP_SECONDS must be a positive number of seconds", validation: (n) => n > 0 })
    )
    const garbage = yield* StorageGarbage
    const storage = yield* MediaStorage
    const uploads = yield* UploadsRepo
    const sweepAll: Effect.Effect<void> = Effect.flatMap(
      garbage.sweep(sweepBatch, storage.remove),
      (removed) => removed === sweepBatch ? sweepAll : Effect.void
    )
    const sweepLeftoverUploads = Effect.gen(function*() {
      const keys = yield* storage.list(uploadsPrefix)
      if (keys.length === 0) return
      const inUse = yield* uploads.keysInUse(keys)
      yield* Effect.forEach(keys.filter((key) => !inUse.has(key)), storage.remove, { concurrency: 8, discard: true })
    })
    yield* Effect.zipRight(sweepAll, sweepLeftoverUploads).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("The media storage sweep failed; it runs again later", cause)),
      Effect.schedule(Schedule.spaced(Duration.seconds(seconds))),
      Effect.forkScoped
    )
  })
).pipe(Layer.provide([StorageGarbage.Default, UploadsRepo.Default]))
