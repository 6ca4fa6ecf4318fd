import { type ApiKeyId, type ApiKeyListQuery, type CreateApiKey, NotFound, type OrganizationId } from "@postline/domain"
import { Effect, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { Cursors } from "../Pagination/Cursor.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { ApiKeysPolicy } from "./Policy.js"
import { ApiKeysRepo } from "./Repo.js"

/** An organization's API keys. Creating or revoking one holds the creator's role until it is done. */
export class ApiKeys extends Effect.Service<ApiKeys>()("ApiKeys", {
  effect: Effect.gen(function*() {
    const repo = yield* ApiKeysRepo
    const cursors = yield* Cursors
    const policy = yield* ApiKeysPolicy

    const create = (organizationId: OrganizationId, input: CreateApiKey) =>
      authorize(policy.canManage(organizationId, { lock: true }))((user) => repo.create(organizationId, user.id, input))
        .pipe(transactionally)

    const list = (organizationId: OrganizationId, query: ApiKeyListQuery) =>
      authorize(policy.canManage(organizationId, { lock: false }))(() =>
        Effect.flatMap(
          pageRequest({ resource: "api keys", filters: { organizationId } }, query),
          (request) => repo.list(organizationId, request)
        )).pipe(Effect.provideService(Cursors, cursors))

    const revoke = (organizationId: OrganizationId, apiKeyId: ApiKeyId) =>
      authorize(policy.canManage(organizationId, { lock: true }))(() =>
        Effect.flatMap(repo.revoke(organizationId, apiKeyId), Option.match({
          onNone: () => new NotFound({ message: `API key ${apiKeyId} not found` }),
          onSome: Effect.succeed
        }))).pipe(transactionally)

    return { create, list, revoke } as const
  }),
  dependencies: [ApiKeysRepo.Default, ApiKeysPolicy.Default, Cursors.Default]
}) {}
