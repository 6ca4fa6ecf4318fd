import { Config, Effect } from "effect"

/**
 * What a team gets where it sets nothing itself. There is one plan today; when
 * plans differ, this is the one place that decides by plan.
 */
export class PlanDefaults extends Effect.Service<PlanDefaults>()("PlanDefaults", {
  effect: Effect.gen(function*() {
    return {
      /** Link tracking for new posts, unless a team sets its own (`PLAN_LINK_TRACKING_DEFAULT`). */
      linkTracking: yield* Config.boolean("PLAN_LINK_TRACKING_DEFAULT").pipe(Config.withDefault(true))
    } as const
  })
}) {}
