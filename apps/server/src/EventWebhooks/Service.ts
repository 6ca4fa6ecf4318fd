import { BadRequest, NotFound, type OrganizationId, type SetEventWebhook } from "@postline/domain"
import { Effect, Option } from "effect"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { Outbound } from "../Outbound/Outbound.js"
import { CredentialsCipher } from "../Secrets/CredentialsCipher.js"
import { generateSigningSecret } from "../Secrets/SignedWebhook.js"
import { EventsGuardLive } from "./Guard.js"
import { EventWebhooksPolicy } from "./Policy.js"
import { EventWebhooksRepo } from "./Repo.js"

const noWebhook = (organizationId: OrganizationId) =>
  new NotFound({ message: `Organization ${organizationId} has no event webhook` })

/**
 * An organization's event webhook. Its signing secret is made here, shown once and kept encrypted with the
 * credentials key; its URL is checked as a call to it would be before it is kept.
 */
export class EventWebhooks extends Effect.Service<EventWebhooks>()("EventWebhooks", {
  effect: Effect.gen(function*() {
    const repo = yield* EventWebhooksRepo
    const policy = yield* EventWebhooksPolicy
    const cipher = yield* CredentialsCipher
    const outbound = yield* Outbound

    const get = (organizationId: OrganizationId) =>
      authorize(policy.canManage(organizationId, { lock: false }))(() =>
        Effect.flatMap(repo.find(organizationId), Option.match({ onNone: () => noWebhook(organizationId), onSome: Effect.succeed })))

    /**
     * Checked first that it may be called (resolving its host as a call would), outside the transaction; then
     * kept with the caller's role held: a new secret when it is created or rotated, else the one it has.
     */
    const set = (organizationId: OrganizationId, { rotateSecret = false, url }: SetEventWebhook) =>
      authorize(policy.canManage(organizationId, { lock: false }))(() =>
        Effect.gen(function*() {
          yield* outbound.check(url).pipe(
            Effect.mapError((error) => new BadRequest({ message: `The URL cannot be called: ${error.message}`, reason: "url_not_callable" }))
          )
          return yield* authorize(policy.canManage(organizationId, { lock: true }))(() =>
            Effect.gen(function*() {
              const exists = yield* repo.lock(organizationId)
              const secret = !exists || rotateSecret ? generateSigningSecret() : null
              const saved = yield* repo.save(organizationId, url, secret === null ? null : yield* cipher.encrypt(secret))
              return { ...saved, signingSecret: secret }
            })).pipe(transactionally)
        }))

    const remove = (organizationId: OrganizationId) =>
      authorize(policy.canManage(organizationId, { lock: true }))(() =>
        Effect.flatMap(repo.remove(organizationId), Option.match({ onNone: () => noWebhook(organizationId), onSome: Effect.succeed }))
      ).pipe(transactionally)

    return { get, set, remove } as const
  }),
  dependencies: [EventWebhooksRepo.Default, EventWebhooksPolicy.Default, EventsGuardLive]
}) {}
