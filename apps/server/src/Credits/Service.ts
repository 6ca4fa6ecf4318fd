import { type CreditTransactionListQuery, NotFound, type OrganizationId } from "@postline/domain"
import { Effect, Option } from "effect"
import { authorize, withSystemActor } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { Cursors } from "../Pagination/Cursor.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { CreditsPolicy } from "./Policy.js"
import { CreditsRepo } from "./Repo.js"

/** An organization's credits and their ledger, for the current caller. */
export class Credits extends Effect.Service<Credits>()("Credits", {
  effect: Effect.gen(function*() {
    const repo = yield* CreditsRepo
    const policy = yield* CreditsPolicy
    const cursors = yield* Cursors

    const balance = (organizationId: OrganizationId) =>
      authorize(policy.canView(organizationId))(() =>
        Effect.flatMap(repo.balanceOf(organizationId), Option.match({
          onNone: () => new NotFound({ message: `Organization ${organizationId} not found` }),
          onSome: Effect.succeed
        })))

    const transactions = (organizationId: OrganizationId, query: CreditTransactionListQuery) =>
      authorize(policy.canAudit(organizationId))(() =>
        Effect.flatMap(
          pageRequest({ resource: "credit transactions", filters: { organizationId } }, query),
          (request) => repo.list(organizationId, request)
        )).pipe(Effect.provideService(Cursors, cursors))

    /** Adds credits, as the operator (or, later, billing) does: no caller to check. */
    const grant = (organizationId: OrganizationId, amount: number, note: string | null) =>
      Effect.gen(function*() {
        if (Option.isNone(yield* withSystemActor(repo.balanceOf(organizationId)))) {
          return yield* new NotFound({ message: `Organization ${organizationId} not found` })
        }
        return yield* withSystemActor(repo.grant(organizationId, amount, note))
      }).pipe(transactionally)

    return { balance, transactions, grant } as const
  }),
  dependencies: [CreditsRepo.Default, CreditsPolicy.Default, Cursors.Default]
}) {}
