import { type Estimate, type OrganizationId, PaymentRequired, type SocialAccountId } from "@postline/domain"
import { Effect, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { CreditsPolicy } from "./Policy.js"
import { capReachedMessage, CreditsRepo, type Headroom } from "./Repo.js"

/** Why a spend of `total` would be refused now, or none: the month's spend cap first, then the credits. */
const refusalOf = (what: string, total: number, headroom: Headroom) =>
  total === 0
    ? Option.none()
    : headroom.cap !== null && headroom.spentThisMonth + total > headroom.cap
    ? Option.some(new PaymentRequired({ message: capReachedMessage(total, headroom.cap, headroom.spentThisMonth) }))
    : !headroom.overage && total > headroom.available
    ? Option.some(new PaymentRequired({ message: `${what} needs ${total} credits and the organization has ${headroom.available} available` }))
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

    const headroomOf = (organizationId: OrganizationId) =>
      authorize(policy.canView(organizationId))(() => repo.headroomOf(organizationId))

    const estimate = (
      organizationId: OrganizationId,
      what: string,
      accounts: ReadonlyArray<{ readonly socialAccountId: SocialAccountId; readonly credits: number }>
    ) =>
      Effect.map(headroomOf(organizationId), (headroom) => {
        const total = accounts.reduce((sum, account) => sum + account.credits, 0)
        const refusal = refusalOf(what, total, headroom)
        const estimate: Estimate = { total, perAccount: accounts, available: headroom.available, sufficient: Option.isNone(refusal) }
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
  dependencies: [CreditsRepo.Default, CreditsPolicy.Default]
}) {}
