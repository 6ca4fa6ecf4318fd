/**
 * What a team gets where it sets nothing itself. There is one plan today; when
 * plans differ, this is the one place that decides by plan.
 */
export const planDefaults = {
  linkTracking: true
} as const
