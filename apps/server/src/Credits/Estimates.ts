import { type Estimate, type OrganizationId, PaymentRequired } from "@postline/domain"
import { Effect, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { BillingSettings } from "../Billing/Settings.js"
import { CreditsPolicy } from "./Policy.js"
import { capReachedMessage, CreditsRepo, type Headroom } from "./Repo.js"
import { howToGetCredits, shortfallMessage } from "./Shortfall.js"

/** What stops a spend: the month's spend cap, or the available credits. */
type Limit = { readonly _tag: "Cap"; readonly cap: number } | { readonly _tag: "Credits" }

/** What stops a spend of `total` now, if anything: the month's spend cap first, then the credits. */
const limitOf = (total: number, headroom: Headroom): Option.Option<Limit> =>
  total === 0
    ? Option.none()
    : headroom.cap !== null && headroom.spentThisMonth + total > headroom.cap
    ? Option.some({ _tag: "Cap" as const, cap: headroom.cap })
    : !headroom.overage && total > headroom.available
    ? Option.some({ _tag: "Credits" as const })
    : Option.none()

/**
 * What a spend would cost and whether the organization can make it now, for publishing and live analytics reads
 * alike: its available credits (or, on a plan that bills usage beyond its credits, whatever it lacks), within
 * what the month's spend cap leaves. Reads only; the spend itself checks again.
 */
export class CreditEstimates extends Effect.Service<CreditEstimates>()("CreditEstimates", {
  effect: Effect.gen(function*() {
    const repo = yield* CreditsRepo
    const policy = yield* CreditsPolicy
    const billing = yield* BillingSettings

    const headroomOf = (organizationId: OrganizationId) =>
      authorize(policy.canView(organizationId))(() => repo.headroomOf(organizationId))

    const estimate = (
      organizationId: OrganizationId,
      what: string,
      accounts: Estimate["perAccount"]
    ) =>
      Effect.map(headroomOf(organizationId), (headroom) => {
        const total = accounts.reduce((sum, account) => sum + account.credits, 0)
        const limit = limitOf(total, headroom)
        const lacksCredits = Option.exists(limit, (limit) => limit._tag === "Credits")
        const estimate: Estimate = {
          total,
          perAccount: accounts,
          available: headroom.available,
          sufficient: Option.isNone(limit),
          ...(lacksCredits ? { howToGetCredits: howToGetCredits(billing, organizationId, total - headroom.available) } : {})
        }
        const refusal = Option.map(limit, (limit) =>
          limit._tag === "Cap"
            ? new PaymentRequired({
              message: capReachedMessage(total, limit.cap, headroom.spentThisMonth),
              reason: "spend_cap_reached"
            })
            : new PaymentRequired({
              message: shortfallMessage(billing, what, organizationId, total, headroom.available),
              reason: "insufficient_credits"
            }))
        return { estimate, refusal }
      })

    return {
      /** The estimate a caller is answered. `what` names the spend in a refusal's message ("Publishing"). */
      estimate: (...args: Parameters<typeof estimate>) => Effect.map(estimate(...args), ({ estimate }) => estimate),
      /** 402 when the estimate is not covered, naming the cap when it is what stops it; else the estimate. */
      require: (...args: Parameters<typeof estimate>) =>
        Effect.flatMap(estimate(...args), ({ estimate, refusal }) =>
          Option.match(refusal, { onNone: () => Effect.succeed(estimate), onSome: Effect.fail }))
    } as const
  }),
  dependencies: [CreditsRepo.Default, CreditsPolicy.Default, BillingSettings.Default]
}) {}
