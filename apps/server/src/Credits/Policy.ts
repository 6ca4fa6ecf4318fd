import type { OrganizationId } from "@postline/domain"
import { Effect } from "effect"
import { Access } from "../Access/Access.js"
import { policy } from "../Access/Authorization.js"

/** Members see their organization's credits; admins, owners and its API keys read the ledger. */
export class CreditsPolicy extends Effect.Service<CreditsPolicy>()("Credits/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access

    const canView = (organizationId: OrganizationId) => policy("Credits", "view")(access.roleIn(organizationId))

    const canAudit = (organizationId: OrganizationId) =>
      policy("Credits", "audit")(Effect.flatMap(access.roleIn(organizationId), access.requireManager))

    return { canView, canAudit } as const
  }),
  dependencies: [Access.Default]
}) {}
