import type { OrganizationId } from "@postline/domain"
import { Effect } from "effect"
import { withSystemActor } from "../Access/Authorization.js"
import { CreditsRepo } from "../Credits/Repo.js"
import { RechargesRepo } from "./RechargesRepo.js"
import { BillingRepo } from "./Repo.js"

/**
 * The end of a started recharge, as its payment's webhook or the recharger's look at the provider tells it, in the
 * caller's transaction. A paid recharge brings its credits once per payment, whoever sees it paid first and whatever
 * became of the recharge meanwhile (ended as not started while the provider had made the payment, or given up
 * while undecided): the payment is recorded among the provider's events (`payment:<id>`, kept as long as they are,
 * far beyond the last webhook or look of the payment); a second insert waits for the first's commit and grants
 * nothing. Ending the recharge is apart: the first to tell its end ends it, the others find it ended.
 */
export class Recharges extends Effect.Service<Recharges>()("Billing/Recharges", {
  effect: Effect.gen(function*() {
    const repo = yield* BillingRepo
    const rechargesRepo = yield* RechargesRepo
    const credits = yield* CreditsRepo

    const grant = (organizationId: OrganizationId, amount: number, paymentId: string) =>
      Effect.gen(function*() {
        if (!(yield* repo.recordEvent(`payment:${paymentId}`, "recharge.paid"))) return
        const note = `Auto-recharge, payment ${paymentId}`
        if (yield* repo.exists(organizationId)) yield* withSystemActor(credits.grant(organizationId, amount, note))
        else yield* Effect.logWarning(`Billing: credits paid for organization ${organizationId}, which no longer exists (${note})`)
      })

    const paid = (organizationId: OrganizationId, token: string, amount: number, paymentId: string) =>
      Effect.zipRight(grant(organizationId, amount, paymentId), rechargesRepo.rechargeEnded(organizationId, token, null))

    const failed = (organizationId: OrganizationId, token: string, reason: string) =>
      rechargesRepo.rechargeEnded(organizationId, token, `The recharge failed: ${reason}`)

    return { paid, failed } as const
  }),
  dependencies: [BillingRepo.Default, RechargesRepo.Default, CreditsRepo.Default]
}) {}
