import type { PostId, SocialAccountId } from "@postline/domain"
import { Config, Effect, Option } from "effect"
import { withSystemActor } from "../Access/Authorization.js"
import { makeFifoLimiter } from "../Concurrency/FifoLimiter.js"
import { transactionally } from "../Database/Transaction.js"
import { PublishingRepo } from "../Publishing/Repo.js"
import { Publishing } from "../Publishing/Service.js"
import { PublishSettings } from "../Publishing/Settings.js"
import { SchedulingRepo } from "./Repo.js"
import type { AttemptResult } from "./Workflow.js"

const done: AttemptResult = { _tag: "Done" }

/** 1, 2, 4 … seconds, at most a minute: how long to wait before the next attempt after a transient failure. */
const backoffSeconds = (attempt: number) => Math.min(60, 2 ** (attempt - 1))

/**
 * The steps of a scheduled publish, as the workflow runs them, each safe to
 * run again after a crash: the server acts on its own here, the permission
 * having been checked when the post was scheduled, and every step checks that
 * its schedule version is still the post's before it acts.
 */
export class ScheduledPublishing extends Effect.Service<ScheduledPublishing>()("ScheduledPublishing", {
  effect: Effect.gen(function*() {
    const repo = yield* SchedulingRepo
    const targets = yield* PublishingRepo
    const publishing = yield* Publishing
    const settings = yield* PublishSettings
    // However many posts come due at once, this process sends a few targets at a time: the database
    // connections they would all wait for are also the ones the engine needs to hand out the next steps,
    // and each step under way holds the engine's bookkeeping in memory.
    const inTurn = yield* makeFifoLimiter(yield* Config.integer("SCHEDULER_CONCURRENCY").pipe(Config.withDefault(8)))

    const begin = (postId: string, version: number) =>
      withSystemActor(transactionally(repo.begin(postId as PostId, version)))

    /**
     * One attempt at one target. A target already published or failed is left
     * alone, and so is one whose attempt is unfinished: it belongs to the
     * process that began it, or, once its time is up, to the recovery, which
     * sends it again with the same provider key.
     */
    const attempt = (input: {
      readonly postId: string
      readonly version: number
      readonly accountId: string
      readonly attempt: number
    }) =>
      withSystemActor(Effect.gen(function*() {
        const postId = input.postId as PostId
        const socialAccountId = input.accountId as SocialAccountId
        const ready = yield* transactionally(Effect.gen(function*() {
          const state = Option.getOrUndefined(yield* repo.sendingState(postId, socialAccountId))
          if (
            state === undefined || state.version !== input.version || state.targetStatus !== "pending" ||
            state.unfinishedAttempt !== null
          ) {
            return Option.none()
          }
          const started = yield* targets.startAttempt(postId, socialAccountId, state.creditsReserved)
          return Option.some({ ...state, postId, socialAccountId, ...started })
        }))
        if (Option.isNone(ready)) return done
        const outcome = yield* publishing.sendAgain(ready.value, { retries: true })
        if (outcome._tag !== "Failed" || !outcome.error.retryable || ready.value.ordinal >= settings.maxAttempts) {
          return done
        }
        return {
          _tag: "Retry",
          delaySeconds: Math.min(outcome.retryAfterSeconds ?? backoffSeconds(input.attempt), settings.retryAfterMaxSeconds)
        } satisfies AttemptResult
      }))

    const finish = (postId: string) => withSystemActor(targets.refreshStatus(postId as PostId))

    return { begin, attempt, finish, inTurn } as const
  }),
  dependencies: [SchedulingRepo.Default, PublishingRepo.Default, Publishing.Default, PublishSettings.Default]
}) {}
