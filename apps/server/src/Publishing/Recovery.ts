import { Duration, Effect, Layer, Option, Schedule } from "effect"
import { type Authorized, withSystemActor } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { SoleProcess } from "../Database/SoleProcess.js"
import { type AbandonedAttempt, type AttemptOutcome, AttemptsRepo, unansweredMessage } from "./AttemptsRepo.js"
import { DeletionsRepo } from "./DeletionsRepo.js"
import { logTargetFailed, noAnswerAfter, SendOutcomes } from "./Outcome.js"
import { TargetSender } from "./Send.js"
import { TargetsRepo } from "./TargetsRepo.js"
import { PublishSettings } from "./Settings.js"
import { Unpublishing } from "./Unpublish.js"

// Targets taken over at once by one process: each is a provider call under way.
const batchSize = 8

/**
 * What no process is finishing: an attempt unfinished `PUBLISH_RECOVERY_SECONDS` after it began was left by
 * a process that died, or got no answer in time. It ends as `unknown` and its target is sent again under a
 * new attempt, with the same provider key, so that the provider can tell a repeat, and under its publish's
 * rules: a scheduled target's failure that may pass is tried again after a backoff, a post-now's ends it.
 * After the last attempt, the target fails and its credits are given back. Each process looks every quarter
 * of that time, from its start, taking attempts no other process has taken. The only process on its database
 * takes those left by an earlier one at once.
 */
export class PublishRecovery extends Effect.Service<PublishRecovery>()("PublishRecovery", {
  effect: Effect.gen(function*() {
    const outcomes = yield* SendOutcomes
    const sender = yield* TargetSender
    const attempts = yield* AttemptsRepo
    const targets = yield* TargetsRepo
    const settings = yield* PublishSettings
    const deletions = yield* DeletionsRepo
    const unpublishing = yield* Unpublishing

    /** What became of an attempt taken over: sent again under a new attempt, or (after the last) its target ended. */
    type TakenOver =
      | { readonly _tag: "Resend"; readonly target: AbandonedAttempt }
      | { readonly _tag: "GaveUp"; readonly left: AbandonedAttempt; readonly ended: Option.Option<AttemptOutcome> }

    const giveUp = (left: AbandonedAttempt) =>
      Effect.gen(function*() {
        const ended = yield* outcomes.giveUp(left)
        yield* targets.refreshStatus(left.postId)
        return { _tag: "GaveUp", left, ended } satisfies TakenOver
      })

    const takeOver = (left: AbandonedAttempt): Effect.Effect<TakenOver, never, Authorized<"Post", "publish">> =>
      left.ordinal >= settings.maxAttempts ? giveUp(left) : Effect.gen(function*() {
        yield* attempts.endUnanswered(left.postId, left.socialAccountId, left.attempt)
        const started = yield* attempts.startAttempt(left.postId, left.socialAccountId, left.creditsReserved, left.scheduled)
        return { _tag: "Resend", target: { ...left, ...started } } satisfies TakenOver
      })

    // Read before this process serves anything: what started earlier is no send of its own.
    const startedAt = (yield* SoleProcess) ? yield* attempts.now : null

    /** Takes over one batch and sends it; answers how many were taken. */
    const recoverBatch = withSystemActor(Effect.gen(function*() {
      const taken = yield* transactionally(Effect.flatMap(
        attempts.abandonedAttempts(settings.recoverySeconds, batchSize, startedAt),
        (abandoned) => Effect.forEach(abandoned, takeOver)
      ))
      // Logged once their ends are committed.
      for (const taking of taken) {
        if (taking._tag === "GaveUp" && Option.isSome(taking.ended) && taking.ended.value._tag !== "Published") {
          yield* logTargetFailed(taking.left, taking.ended.value.error)
        }
      }
      const toSend = taken.flatMap((taking) => taking._tag === "Resend" ? [taking.target] : [])
      yield* Effect.forEach(
        toSend,
        (target) =>
          Effect.zipRight(sender.sendAgain(target, { retries: target.scheduled }), targets.refreshStatus(target.postId)),
        { concurrency: "unbounded", discard: true }
      )
      return taken.length
    }))

    /**
     * Deletes left unfinished are asked of the network again under a new attempt (a delete is the same delete
     * however often it is asked); after the last attempt, the target is published again, the delete failed.
     */
    const recoverDeletes = withSystemActor(Effect.gen(function*() {
      const taken = yield* transactionally(Effect.flatMap(
        deletions.abandonedDeletes(settings.recoverySeconds, batchSize, startedAt),
        (abandoned) =>
          Effect.forEach(abandoned, (left) =>
            Effect.gen(function*() {
              yield* attempts.endUnanswered(left.postId, left.socialAccountId, left.attempt)
              const attempt = yield* deletions.startDelete(left.postId, left.socialAccountId)
              if (left.ordinal < settings.maxAttempts) return { ...left, attempt, resend: true }
              const error = noAnswerAfter(left.ordinal)
              yield* deletions.finishDelete(left.postId, left.socialAccountId, attempt, {
                _tag: "Failed",
                error: { ...error, message: `The network did not answer the delete: ${error.message}` }
              }, unansweredMessage)
              return { ...left, attempt, resend: false }
            }))
      ))
      yield* Effect.forEach(taken, (left) =>
        Effect.zipRight(
          left.resend
            ? Effect.asVoid(unpublishing.deleteAt(left.teamId, left.postId, left.socialAccountId, left.attempt))
            : Effect.void,
          targets.refreshStatus(left.postId)
        ), { concurrency: "unbounded", discard: true })
      return taken.length
    }))

    /** Batch after batch while there are full ones; then the posts whose sends all ended without a word. */
    const recover = recoverBatch.pipe(
      Effect.repeat({ while: (taken) => taken === batchSize }),
      Effect.zipRight(recoverDeletes.pipe(Effect.repeat({ while: (taken) => taken === batchSize }))),
      Effect.zipRight(withSystemActor(targets.refreshEnded))
    )

    const interval = Duration.seconds(settings.recoverySeconds / 4)

    return { recover, interval } as const
  }),
  dependencies: [
    SendOutcomes.Default,
    TargetSender.Default,
    AttemptsRepo.Default,
    TargetsRepo.Default,
    PublishSettings.Default,
    DeletionsRepo.Default,
    Unpublishing.Default
  ]
}) {}

/**
 * The recovery, running in the background of every server process. It needs PublishRecovery built before anything
 * of the process can start a send (Workers.ts provides it to the dispatcher too): the only process on its
 * database reads its start as it is built, and takes over every attempt begun before.
 */
export const PublishRecoveryLive = Layer.scopedDiscard(Effect.gen(function*() {
  const { interval, recover } = yield* PublishRecovery
  yield* recover.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("Publishing: could not recover unfinished sends", cause)),
    Effect.repeat(Schedule.spaced(interval)),
    Effect.forkScoped
  )
}))
