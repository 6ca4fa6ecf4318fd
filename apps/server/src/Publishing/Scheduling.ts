import {
  BadRequest,
  Conflict,
  minScheduleLeadSeconds,
  type PostId,
  type ScheduleRequest,
  type ScheduleResponse,
  type TeamId
} from "@postline/domain"
import { Config, DateTime, Effect, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { PostingSlots } from "../PostingSlots/Service.js"
import { PostsPolicy } from "../Posts/Policy.js"
import { PostsRepo } from "../Posts/Repo.js"
import { postNotFound } from "../Posts/Service.js"
import { outcomeOf } from "./PostNow.js"
import { Publishing } from "./Service.js"
import { TargetsRepo } from "./TargetsRepo.js"

const yearMillis = 366 * 24 * 60 * 60 * 1000


/**
 * Scheduling posts: the same checks and credit holds as publishing now, the
 * targets left pending and due at the time, when whichever server process
 * claims them first sends them (Dispatcher.ts). A new schedule, or none,
 * replaces the targets' due time, or gives them up.
 */
export class Scheduling extends Effect.Service<Scheduling>()("Scheduling", {
  effect: Effect.gen(function*() {
    const publishing = yield* Publishing
    const posts = yield* PostsRepo
    const targets = yield* TargetsRepo
    const policy = yield* PostsPolicy
    const slots = yield* PostingSlots
    const minLeadSeconds = yield* Config.integer("SCHEDULE_MIN_LEAD_SECONDS").pipe(Config.withDefault(minScheduleLeadSeconds))

    /**
     * When the request asks for: at least the minimum lead and at most a year ahead; or the team's next free
     * posting slot from the minimum lead on, which locks the team until the schedule's transaction ends.
     */
    const dueTime = (teamId: TeamId, request: ScheduleRequest) =>
      Effect.gen(function*() {
        const now = DateTime.toEpochMillis(yield* DateTime.now)
        const earliest = now + minLeadSeconds * 1000
        if (!("scheduledAt" in request)) {
          const slot = yield* slots.nextFreeSlot(teamId, new Date(earliest))
          if (Option.isNone(slot)) {
            return yield* new BadRequest({
              message: "This team has no posting slots: set some, or give scheduledAt",
              reason: "no_posting_slots"
            })
          }
          return slot.value
        }
        const at = new Date(request.scheduledAt)
        if (at.getTime() < earliest || at.getTime() > now + yearMillis) {
          return yield* new BadRequest({
            message: `scheduledAt must be at least ${minLeadSeconds} seconds and at most a year ahead`,
            reason: "scheduled_at_out_of_range"
          })
        }
        return at
      })

    const schedule = (teamId: TeamId, postId: PostId, request: ScheduleRequest) =>
      authorize(policy.canPublish(teamId, { lock: false }))(() =>
        Effect.gen(function*() {
          // The slot is chosen in the transaction that takes it, so that two posts never get the same one.
          const { at, prepared } = yield* Effect.gen(function*() {
            const at = yield* dueTime(teamId, request)
            const chosen = yield* publishing.accountsOf(teamId, request.socialAccountIds)
            return { at, prepared: yield* publishing.prepare(teamId, postId, chosen, { _tag: "At", at }) }
          }).pipe(transactionally)
          const results = prepared.checks.map((checked) => ({
            socialAccountId: checked.account.id,
            status: checked._tag === "Send" ? "scheduled" as const : "failed" as const,
            error: checked._tag === "Refused" ? checked.error : null
          }))
          const failed = results.filter((result) => result.status === "failed").length
          return {
            postId,
            scheduledAt: at.toISOString(),
            results,
            outcome: outcomeOf(failed, results.length)
          } satisfies ScheduleResponse
        }))

    /** Back to draft (or what its earlier targets make it), its held credits given back: 409 once it has begun. */
    const unschedule = (teamId: TeamId, postId: PostId) =>
      authorize(policy.canPublish(teamId, { lock: false }))(() =>
        Effect.gen(function*() {
          // The post is read back in the same transaction: a delete right after could leave nothing to read.
          return yield* authorize(policy.canPublish(teamId, { lock: true }))((team) =>
            Effect.gen(function*() {
              const post = Option.getOrUndefined(yield* posts.lockForPublishing(teamId, postId))
              if (post === undefined) return yield* postNotFound(postId)
              if (post.status !== "scheduled") {
                return yield* new Conflict({
                  message: post.status === "publishing"
                    ? `Post ${postId} has begun publishing: it can no longer be unscheduled`
                    : `Post ${postId} is not scheduled`,
                  reason: post.status === "publishing" ? "post_publishing" : "post_not_scheduled"
                })
              }
              yield* publishing.releaseWaiting(team.organizationId, postId)
              yield* targets.refreshStatus(postId)
              return yield* authorize(policy.canRead(teamId))(() => Effect.map(posts.find(teamId, postId), Option.getOrThrow))
            })).pipe(transactionally)
        }))

    return { schedule, unschedule } as const
  }),
  dependencies: [Publishing.Default, PostsRepo.Default, TargetsRepo.Default, PostsPolicy.Default, PostingSlots.Default]
}) {}
