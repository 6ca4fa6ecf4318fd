import type { PostId } from "@postline/domain"
import { Config, Effect, Layer, Queue, Schedule } from "effect"
import { withSystemActor } from "../Access/Authorization.js"
import { pollInterval } from "../Background/Poll.js"
import { transactionally } from "../Database/Transaction.js"
import { ProviderBudgets } from "../Providers/Budgets.js"
import { DispatchRepo, type DueTarget } from "./DispatchRepo.js"
import type { Started } from "./AttemptsRepo.js"
import { TargetSender } from "./Send.js"
import { TargetsRepo } from "./TargetsRepo.js"

/**
 * How many sends of due targets each process has under way at most (`SCHEDULER_CONCURRENCY`), and how often
 * it looks for due targets when it found none (Background/Poll.ts), which bounds how late one can be.
 */
export class DispatchSettings extends Effect.Service<DispatchSettings>()("DispatchSettings", {
  effect: Effect.gen(function*() {
    const concurrency = yield* Config.integer("SCHEDULER_CONCURRENCY").pipe(
      Config.withDefault(16),
      Config.validate({ message: "must be a whole number from 1 to 256", validation: (n) => n >= 1 && n <= 256 })
    )
    return { concurrency, poll: yield* pollInterval } as const
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
    const targets = yield* TargetsRepo
    const sender = yield* TargetSender
    const budgets = yield* ProviderBudgets
    const { concurrency, poll } = yield* DispatchSettings
    const scope = yield* Effect.scope
    // A slot handed back wakes the loop, which may be waiting for one.
    const freed = yield* Queue.sliding<void>(1)
    let inFlight = 0
    // Posts whose sends have ended since their statuses were last brought up to date.
    let ended = new Set<PostId>()

    /**
     * Whether a due target may be sent now, its account's budget counting the sends of this batch before it
     * (`inBatch`); when not, it is held back until the budget lets it through.
     */
    const allowed = (due: DueTarget, inBatch: Map<string, number>) =>
      Effect.gen(function*() {
        const windows = due.account === null ? [] : budgets.windowsOf(due.account.provider)
        if (due.account === null || windows.length === 0) return true
        const before = inBatch.get(due.socialAccountId) ?? 0
        const usage = (yield* repo.lockUsage(due.socialAccountId, windows)).map((sends) => sends + before)
        const full = budgets.overIn(due.account.provider, usage)
        if (full === undefined) {
          inBatch.set(due.socialAccountId, before + 1)
          return true
        }
        const sends = usage[windows.indexOf(full)]
        const agesOut = yield* repo.agesOut(due.socialAccountId, full.seconds, budgets.toAgeOut(full, sends))
        yield* repo.holdBack(due.postId, due.socialAccountId, new Date(agesOut.getTime() + budgets.jitter()))
        return false
      })

    /**
     * Claims up to `limit` due targets and starts the attempts of those their budgets allow; answers how many
     * were due, and what to send.
     */
    const claim = (limit: number) =>
      Effect.gen(function*() {
        const due = yield* repo.claimDue(limit)
        const inBatch = new Map<string, number>()
        const toStart = yield* Effect.filter(due, (target) => allowed(target, inBatch))
        const started = toStart.length === 0 ? [] : yield* repo.startAll(toStart)
        const byKey = new Map(toStart.map((target) => [`${target.postId}/${target.socialAccountId}`, target]))
        const sending = started.map(({ attempt, ordinal, postId, socialAccountId }) => ({
          ...byKey.get(`${postId}/${socialAccountId}`)!,
          attempt,
          ordinal
        }))
        return { due: due.length, sending }
      }).pipe(transactionally, withSystemActor)

    const send = ({ account, ...target }: DueTarget & Started) =>
      sender.sendTo(target, account ?? undefined, { retries: true }).pipe(
        withSystemActor,
        Effect.catchAllCause((cause) => Effect.logError("Scheduler: a due post could not be sent", cause)),
        Effect.ensuring(Effect.zipRight(
          Effect.sync(() => {
            inFlight--
            ended.add(target.postId)
          }),
          Queue.offer(freed, undefined)
        ))
      )

    /**
     * Brings the statuses of the posts whose sends have ended up to date, in one statement for all: each send
     * committed before it, so that the last such statement for a post, in whichever process, sees all its targets.
     */
    const refreshEnded = Effect.suspend(() => {
      if (ended.size === 0) return Effect.void
      const postIds = [...ended]
      ended = new Set()
      return withSystemActor(targets.refreshStatuses(postIds))
    })

    /**
     * Claims while there are free slots, half of them at least so that claims come in batches; sleeps a poll
     * interval once nothing more is due.
     */
    const dispatch = Effect.gen(function*() {
      for (;;) {
        yield* refreshEnded
        const free = concurrency - inFlight
        if (free < Math.max(1, concurrency / 2)) {
          yield* Queue.take(freed)
          continue
        }
        const { due, sending } = yield* claim(free)
        inFlight += sending.length
        for (const target of sending) yield* Effect.forkIn(send(target), scope)
        // Nothing more is due: look again after a while, or once a send ends, whose post is then brought up to date.
        if (due < free) yield* Effect.raceFirst(Effect.sleep(poll), Queue.take(freed))
      }
    })

    const run = dispatch.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("Scheduler: could not claim due posts", cause)),
      Effect.repeat(Schedule.spaced(poll))
    )

    return { run, inFlight: () => inFlight, concurrency } as const
  }),
  dependencies: [DispatchRepo.Default, TargetsRepo.Default, TargetSender.Default, ProviderBudgets.Default, DispatchSettings.Default]
}) {}

/** The dispatcher, running in the background of every server process. */
export const DispatcherLive = Layer.scopedDiscard(Effect.flatMap(Dispatcher, (dispatcher) => Effect.forkScoped(dispatcher.run)))
