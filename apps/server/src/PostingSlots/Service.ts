import type { SetPostingSlots, TeamId, TeamPostingSlots } from "@postline/domain"
import { Effect, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { PostingSlotsPolicy } from "./Policy.js"
import { PostingSlotsRepo } from "./Repo.js"
import { slotInstants } from "./WallClock.js"

// How many days of slots are checked against the scheduled posts at a time.
const searchDays = 28

/** A team's posting slots, for the current caller; and the next free one, for the scheduler. */
export class PostingSlots extends Effect.Service<PostingSlots>()("PostingSlots", {
  effect: Effect.gen(function*() {
    const repo = yield* PostingSlotsRepo
    const policy = yield* PostingSlotsPolicy

    const get = (teamId: TeamId) =>
      authorize(policy.canRead(teamId))(() => Effect.map(repo.list(teamId), (slots): TeamPostingSlots => ({ slots })))

    const set = (teamId: TeamId, { slots }: SetPostingSlots) =>
      authorize(policy.canManage(teamId, { lock: true }))(() =>
        Effect.map(repo.replace(teamId, slots), (stored): TeamPostingSlots => ({ slots: stored }))
      ).pipe(transactionally)

    /**
     * The first slot of the team strictly after `now` that no scheduled post of the team holds (a post in
     * status `scheduled` at exactly that instant); none when the team has no slots. For scheduling a post,
     * which is publishing it: the caller discharges `Authorized<"Post", "publish">` (PostsPolicy.canPublish).
     * Call it in the transaction that then writes the post's `scheduled_at`: it locks the team's row until
     * that transaction ends, so that two posts scheduled for the next slot at once get different slots.
     */
    const nextFreeSlot = (teamId: TeamId, now: Date) =>
      Effect.gen(function*() {
        const team = Option.getOrUndefined(yield* repo.forScheduling(teamId))
        if (team === undefined || team.slots.length === 0) return Option.none<Date>()
        let after = now.getTime()
        // Each round covers a few weeks; every slot taken is a scheduled post, so the rounds end.
        for (;;) {
          const candidates = slotInstants(team.slots, team.timeZone, after, searchDays)
          const taken = yield* repo.takenAmong(teamId, candidates)
          const free = candidates.find((instant) => !taken.has(instant))
          if (free !== undefined) return Option.some(new Date(free))
          after = candidates[candidates.length - 1]
        }
      })

    return { get, set, nextFreeSlot } as const
  }),
  dependencies: [PostingSlotsRepo.Default, PostingSlotsPolicy.Default]
}) {}
