import type { OrganizationId } from "@postline/domain"
import { Effect } from "effect"
import { withSystemActor } from "../Access/Authorization.js"
import { CreditsRepo } from "../Credits/Repo.js"
import { BillingRepo } from "./Repo.js"

/**
 * The end of a started recharge, as its payment's webhook or the recharger's look at the provider tells it, in the
 * caller's transaction. Whichever comes first ends it; the other finds it ended and does nothing, so that a paid
 * recharge brings its credits once.
 */
export class Recharges extends Effect.Service<Recharges>()("Billing/Recharges", {
  effect: Effect.gen(function*() {
    const repo = yield* BillingRepo
    const credits = yield* CreditsRepo

    const paid = (organizationId: OrganizationId, token: string, amount: number, reference: string) =>
      Effect.flatMap(repo.rechargeEnded(organizationId, token, null), (ended) =>
        ended
          ? Effect.asVoid(withSystemActor(credits.grant(organizationId, amount, `Auto-recharge, payment ${reference}`)))
          : Effect.void)

    const failed = (organizationId: OrganizationId, token: string, reason: string) =>
      Effect.asVoid(repo.rechargeEnded(organizationId, token, `The recharge failed: ${reason}`))

    return { paid, failed } as const
  }),
  dependencies: [BillingRepo.Default, CreditsRepo.Default]
}) {}
