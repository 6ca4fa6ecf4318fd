import { Effect, Queue } from "effect"

/**
 * At most `permits` effects at a time; the others wait in line and are let in
 * one by one, first come first served.
 *
 * Effect's Semaphore wakes every waiter on each release, and each waiter that
 * loses the race waits again one frame deeper: with hundreds of scheduled
 * targets due at once, that held over a gigabyte of frames and stalled
 * publishing. A queue of permits hands each released permit to one waiter.
 */
export const makeFifoLimiter = (permits: number) =>
  Effect.gen(function*() {
    const free = yield* Queue.bounded<void>(permits)
    yield* Queue.offerAll(free, Array.from({ length: permits }, () => undefined))
    return <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.zipRight(restore(Queue.take(free)), Effect.ensuring(restore(self), Queue.offer(free, undefined)))
      )
  })
