import { Config, Duration, Effect, Layer, Option, Queue, Schedule } from "effect"
import { withSystemActor } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { ProviderBudgets } from "./Budgets.js"
import { DispatchRepo, type DueTarget } from "./DispatchRepo.js"
import { type AttemptToSend, PublishingRepo } from "./Repo.js"
import { Publishing } from "./Service.js"

/**
 * How many sends of due targets each process has under way at most (`SCHEDULER_CONCURRENCY`), and how often
 * it looks for due targets when it found none (`SCHEDULER_POLL_MS`), which bounds how late one can be.
 */
export class DispatchSettings extends Effect.Service<DispatchSettings>()("DispatchSettings", {
  effect: Effect.gen(function*() {
    const concurrency = yield* Config.integer("SCHEDULER_CONCURRENCY").pipe(
      Config.withDefault(16),
      Config.validate({ message: "must be a whole number from 1 to 256", validation: (n) => n >= 1 && n <= 256 })
    )
    const pollMs = yield* Config.integer("SCHEDULER_POLL_MS").pipe(
      Config.withDefault(1000),
      Config.validate({ message: "must be a whole number of milliseconds, at least 10", validation: (n) => n >= 10 })
    )
    return { concurrency, poll: Duration.millis(pollMs) } as const
  })
}) {}

/**
 * Sends what is due: scheduled targets at their time, retries after their backoff, targets held back for
 * their account's budget once it allows. Each process claims due targets in batches no larger than its
 * free sending slots, so that its memory is bounded by `SCHEDULER_CONCURRENCY` however many are due, and
 * starts each target's attempt in the claim's transaction: a process that dies mid-send leaves an
 * unfinished attempt, which the recovery (Recovery.ts) sends again with the same provider key.
 */
export class Dispatcher extends Effect.Service<Dispatcher>()("Dispatcher", {
  scoped: Effect.gen(function*() {
    const repo = yield* DispatchRepo
    const targets = yield* PublishingRepo
    const publishing = yield* Publishing
    const budgets = yield* ProviderBudgets
    const { concurrency, poll } = yield* DispatchSettings
    const scope = yield* Effect.scope
    // A slot handed back wakes the loop, which may be waiting for one.
    const freed = yield* Queue.sliding<void>(1)
    let inFlight = 0

    /** A due target is sent now, or held back until its account's budget lets it through. */
    const startOrHoldBack = (due: DueTarget) =>
      Effect.gen(function*() {
        const windows = due.provider === null ? [] : budgets.windowsOf(due.provider)
        if (windows.length > 0) {
          const usage = yield* repo.lockUsage(due.socialAccountId, windows)
          const full = due.provider === null ? undefined : budgets.overIn(due.provider, usage)
          if (full !== undefined) {
            const sends = usage[windows.indexOf(full)]
            const agesOut = yield* repo.agesOut(due.socialAccountId, full.seconds, budgets.toAgeOut(full, sends))
            const at = new Date((agesOut?.getTime() ?? Date.now()) + budgets.jitter())
            yield* repo.holdBack(due.postId, due.socialAccountId, at)
            return Option.none<AttemptToSend>()
          }
        }
        const started = yield* targets.startAttempt(due.postId, due.socialAccountId, due.creditsReserved)
        return Option.some<AttemptToSend>({ ...due, ...started })
      })

    /** Claims up to `limit` due targets and starts those their budgets allow; answers how many were due. */
    const claim = (limit: number) =>
      Effect.gen(function*() {
        const due = yield* repo.claimDue(limit)
        const started = (yield* Effect.forEach(due, startOrHoldBack)).flatMap(Option.toArray)
        for (const postId of new Set(started.map((target) => target.postId))) yield* repo.begin(postId)
        return { due: due.length, started }
      }).pipe(transactionally, withSystemActor)

    const send = (target: AttemptToSend) =>
      publishing.sendAgain(target, { retries: true }).pipe(
        Effect.zipRight(targets.refreshStatus(target.postId)),
        withSystemActor,
        Effect.catchAllCause((cause) => Effect.logError("Scheduler: a due post could not be sent", cause)),
        Effect.ensuring(Effect.zipRight(Effect.sync(() => inFlight--), Queue.offer(freed, undefined)))
      )

    /**
     * Claims while there are free slots, half of them at least so that claims come in batches; sleeps a poll
     * interval once nothing more is due.
     */
    const dispatch = Effect.gen(function*() {
      for (;;) {
        const free = concurrency - inFlight
        if (free < Math.max(1, concurrency / 2)) {
          yield* Queue.take(freed)
          continue
        }
        const { due, started } = yield* claim(free)
        inFlight += started.length
        for (const target of started) yield* Effect.forkIn(send(target), scope)
        if (due < free) yield* Effect.sleep(poll)
      }
    })

    const run = dispatch.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("Scheduler: could not claim due posts", cause)),
      Effect.repeat(Schedule.spaced(poll))
    )

    return { run, inFlight: () => inFlight, concurrency } as const
  }),
  dependencies: [DispatchRepo.Default, PublishingRepo.Default, Publishing.Default, ProviderBudgets.Default, DispatchSettings.Default]
}) {}

/** The dispatcher, running in the background of every server process. */
export const DispatcherLive = Layer.scopedDiscard(Effect.flatMap(Dispatcher, (dispatcher) => Effect.forkScoped(dispatcher.run)))
