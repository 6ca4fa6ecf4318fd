import type { OrganizationId } from "@postline/domain"
import { Effect } from "effect"
import { Access, isManager } from "../Access/Access.js"
import { policy } from "../Access/Authorization.js"

/** Members see their organization's credits; admins, owners and its API keys see and change its billing. */
export class BillingPolicy extends Effect.Service<BillingPolicy>()("Billing/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access

    /** Succeeds with whether the caller sees the whole billing state, or the credits only. */
    const canView = (organizationId: OrganizationId) =>
      policy("Billing", "view")(Effect.map(access.roleIn(organizationId), isManager))

    const canManage = (organizationId: OrganizationId, options: { readonly lock: boolean }) =>
      policy("Billing", "manage")(Effect.flatMap(access.roleIn(organizationId, options), access.requireManager))

    return { canView, canManage } as const
  }),
  dependencies: [Access.Default]
}) {}
