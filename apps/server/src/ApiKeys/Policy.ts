import type { OrganizationId } from "@postline/domain"
import { Effect } from "effect"
import { Access } from "../Access/Access.js"
import type { LockOption } from "../Access/Repo.js"
import { policy } from "../Access/Authorization.js"

/** Admins and owners, in person, manage their organization's API keys. */
export class ApiKeysPolicy extends Effect.Service<ApiKeysPolicy>()("ApiKeys/Policy", {
  effect: Effect.gen(function*() {
    const access = yield* Access

    /** Answers who is acting; a key cannot make or see keys (403), whatever its organization's keys allow. */
    const canManage = (organizationId: OrganizationId, options: LockOption) =>
      policy("ApiKey", "manage")(Effect.gen(function*() {
        const user = yield* access.personIn(organizationId, "manage API keys")
        yield* access.requireManager(yield* access.roleIn(organizationId, options))
        return user
      }))

    return { canManage } as const
  }),
  dependencies: [Access.Default]
}) {}
