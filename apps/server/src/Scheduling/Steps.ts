import type { PostId, SocialAccountId } from "@postline/domain"
import { Config, Effect, Option } from "effect"
import { withSystemActor } from "../Access/Authorization.js"
import { makeFifoLimiter } from "../Concurrency/FifoLimiter.js"
import { CreditsRepo } from "../Credits/Repo.js"
import { transactionally } from "../Database/Transaction.js"
import { Links } from "../Links/Service.js"
import { PublishingRepo } from "../Publishing/Repo.js"
import { Publishing } from "../Publishing/Service.js"
import { SocialAccountsRepo } from "../SocialAccounts/Repo.js"
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
    const accounts = yield* SocialAccountsRepo
    const credits = yield* CreditsRepo
    const publishing = yield* Publishing
    const links = yield* Links
    const maxAttempts = yield* Config.integer("SCHEDULE_MAX_ATTEMPTS").pipe(Config.withDefault(5))
    // However many posts come due at once, this process sends a few targets at a time: the database
    // connections they would all wait for are also the ones the engine needs to hand out the next steps,
    // and each step under way holds the engine's bookkeeping in memory.
    const inTurn = yield* makeFifoLimiter(yield* Config.integer("SCHEDULER_CONCURRENCY").pipe(Config.withDefault(8)))

    const begin = (postId: string, version: number) =>
      withSystemActor(transactionally(repo.begin(postId as PostId, version)))

    /**
     * One attempt at one target. A target already published or failed is left
     * alone; an attempt whose process died during the provider call is made
     * again under the same number, with the same provider key, so that the
     * provider can tell it is a repeat.
     */
    const attempt = (input: {
      readonly postId: string
      readonly version: number
      readonly accountId: string
      readonly attempt: number
    }) =>
      withSystemActor(Effect.gen(function*() {
        const postId = input.postId as PostId
        const accountId = input.accountId as SocialAccountId
        const ready = yield* transactionally(Effect.gen(function*() {
          const state = Option.getOrUndefined(yield* repo.sendingState(postId, accountId))
          if (state === undefined || state.version !== input.version || state.targetStatus !== "pending") {
            return Option.none()
          }
          const number = state.unfinishedAttempt ?? (yield* targets.startAttempt(postId, accountId, state.creditsReserved))
          return Option.some({ ...state, number })
        }))
        if (Option.isNone(ready)) return done
        const state = ready.value
        const hold = { postId, socialAccountId: accountId, amount: state.creditsReserved }
        const [account] = yield* accounts.forPublishing(state.teamId, [accountId])
        if (account === undefined) {
          yield* Effect.gen(function*() {
            yield* targets.finishAttempt(postId, accountId, state.number, {
              _tag: "Failed",
              error: { category: "unknown", message: "The account was removed before the post was due", retryable: false }
            })
            yield* credits.settle(state.organizationId, hold, "release")
          }).pipe(transactionally)
          return done
        }
        const final = input.attempt >= maxAttempts
        const { outcome, retryAfterSeconds } = yield* publishing.publishTarget({
          organizationId: state.organizationId,
          postId,
          // The text as checked when the post was scheduled: its links tracked with the codes made then.
          content: yield* links.linksFor({ id: postId, teamId: state.teamId, content: state.content, linkTracking: state.linkTracking }),
          account,
          attempt: state.number,
          hold
        }, { final })
        return outcome._tag === "Failed" && outcome.error.retryable && !final
          ? { _tag: "Retry", delaySeconds: retryAfterSeconds ?? backoffSeconds(input.attempt) } satisfies AttemptResult
          : done
      }))

    const finish = (postId: string) => withSystemActor(targets.refreshStatus(postId as PostId))

    return { begin, attempt, finish, inTurn, maxAttempts } as const
  }),
  dependencies: [
    SchedulingRepo.Default,
    PublishingRepo.Default,
    SocialAccountsRepo.Default,
    CreditsRepo.Default,
    Publishing.Default,
    Links.Default
  ]
}) {}
