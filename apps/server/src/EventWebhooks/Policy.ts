import type { OrganizationId } from "@postline/domain"
import { Effect } from "effect"
import { Access } from "../Access/Access.js"
import type { LockOption } from "../Access/Repo.js"
import { policy } from "../Access/Authorization.js"

/**
 * Admins, owners and the organization's API keys (which act as its admins) see and set where its events go;
 * members get 403: the URL may carry the receiver's own token.
 */
export class EventWebhooksPolicy extends Effect.Service<EventWebhooksPolicy>()("EventWebhooks/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access

    const canManage = (organizationId: OrganizationId, options: LockOption) =>
      policy("EventWebhook", "manage")(Effect.flatMap(access.roleIn(organizationId, options), access.requireManager))

    return { canManage } as const
  }),
  dependencies: [Access.Default]
}) {}
