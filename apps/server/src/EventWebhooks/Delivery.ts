import { type PostEvent, PostEventData } from "@postline/domain"
import { Effect, Either, Layer, Schedule } from "effect"
import { Outbound } from "../Outbound/Outbound.js"
import { CredentialsCipher } from "../Secrets/CredentialsCipher.js"
import { signedWebhookRequest } from "../Secrets/SignedWebhook.js"
import { pollInterval } from "../Background/Poll.js"
import { deliveryTimeoutMillis, EventsGuardLive } from "./Guard.js"
import { type DueDelivery, EventWebhooksRepo } from "./Repo.js"

/** Events delivered at once by one process. */
const batchSize = 8

/** Deliveries of one event at most; then it is given up on. */
export const maxDeliveryAttempts = 8

/** 10 s, 30 s, 90 s … at most an hour: the wait after the `attempts`th failed delivery (about two hours in all). */
export const redeliverySeconds = (attempts: number) => Math.min(3600, 10 * 3 ** (attempts - 1))

// An event claimed is due again after this, should its process die while delivering it: more than a delivery takes.
const leaseSeconds = Math.ceil(deliveryTimeoutMillis / 1000) + 50

/** The same on every delivery of one event, as Standard Webhooks wants, and a valid header value. */
const messageIdOf = (delivery: Pick<DueDelivery, "id">) => `msg_${delivery.id.replaceAll("-", "")}`

/** The event's body: its fields in the documented order, the same on every delivery. */
const bodyOf = (delivery: DueDelivery) => {
  const data = Object.fromEntries(Object.keys(PostEventData.fields).map((field) => [field, delivery.data[field] ?? null]))
  const event = { type: delivery.type, timestamp: delivery.createdAt.toISOString(), data } as unknown as PostEvent
  return JSON.stringify(event)
}

/**
 * Delivers the organizations' events (docs/webhooks.md), which the statement that ended each target wrote in
 * `event_deliveries`: every server process claims those due in small batches, as the scheduler claims due
 * posts, each `SCHEDULER_POLL_MS`, and POSTs each, signed, to its organization's URL as it stands then, within
 * 10 seconds. A 2xx answer delivers it; anything else is tried again after 10 s, 30 s, 90 s … (at most an
 * hour), 8 times in all, then given up on. A process that dies while delivering leaves the event due again a
 * minute later: an event may arrive twice, with the same `webhook-id`, never not at all while it is retried.
 */
export class EventDelivery extends Effect.Service<EventDelivery>()("EventDelivery", {
  effect: Effect.gen(function*() {
    const repo = yield* EventWebhooksRepo
    const cipher = yield* CredentialsCipher
    const outbound = yield* Outbound
    const poll = yield* pollInterval

    /** The failure of one delivery: tried again later, or given up on (and logged) after the last. */
    const fail = (delivery: DueDelivery, reason: string) => {
      const last = delivery.attempts >= maxDeliveryAttempts
      const error = last ? `${reason} (gave up on this event after ${delivery.attempts} attempts)` : reason
      return Effect.zipRight(
        repo.failed(delivery.id, error, last ? null : redeliverySeconds(delivery.attempts)),
        last
          ? Effect.logWarning("Event webhook: gave up on an event").pipe(Effect.annotateLogs({
            organizationId: delivery.organizationId,
            event: delivery.type,
            postId: String(delivery.data.postId),
            socialAccountId: String(delivery.data.socialAccountId),
            attempts: delivery.attempts,
            error: reason
          }))
          : Effect.void
      )
    }

    const deliver = (delivery: DueDelivery) =>
      Effect.gen(function*() {
        const secret = yield* Effect.either(cipher.decrypt(delivery.secret))
        if (Either.isLeft(secret)) {
          return yield* fail(delivery, "The signing secret cannot be read by this server: rotate it (PUT with rotateSecret: true)")
        }
        const request = yield* Effect.try(() => signedWebhookRequest(secret.right, messageIdOf(delivery), bodyOf(delivery)))
        const answer = yield* Effect.either(outbound.request(delivery.url, request))
        if (Either.isLeft(answer)) return yield* fail(delivery, answer.left.message)
        const { status, statusText } = answer.right
        if (status >= 200 && status <= 299) return yield* repo.delivered(delivery.id)
        return yield* fail(delivery, `The receiver answered ${status} ${statusText}`.trim())
      }).pipe(
        // A bug of ours must not stop the others, nor be tried forever: it counts as a failed delivery (and when
        // even that cannot be written, the event is tried again once its lease ends).
        Effect.catchAllCause((cause) =>
          Effect.logError("Event webhook: an event could not be delivered", cause).pipe(
            Effect.zipRight(fail(delivery, "The server could not deliver it: see its log")),
            Effect.catchAllCause(() => Effect.void)
          )
        )
      )

    /** Claims a batch and delivers it; answers how many were claimed. */
    const deliverBatch = Effect.gen(function*() {
      const due = yield* repo.claimDue(batchSize, leaseSeconds)
      yield* Effect.forEach(due, deliver, { concurrency: "unbounded", discard: true })
      return due.length
    })

    /** Batch after batch while they are full. */
    const deliverDue = deliverBatch.pipe(Effect.repeat({ while: (claimed) => claimed === batchSize }))

    /**
     * Secrets still encrypted with a previous credentials key are encrypted again with the current one, so that
     * the previous key can be dropped after a rotation; one that no key reads is left (rotate it).
     */
    const reencryptSecrets = Effect.gen(function*() {
      for (const { organizationId, secret } of yield* repo.secrets) {
        if (cipher.isCurrent(secret)) continue
        const plaintext = yield* Effect.either(cipher.decrypt(secret))
        if (Either.isRight(plaintext)) yield* repo.reencrypt(organizationId, secret, yield* cipher.encrypt(plaintext.right))
      }
    })

    const run = Effect.zipRight(
      reencryptSecrets.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("Event webhook: could not re-encrypt signing secrets", cause))
      ),
      deliverDue.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("Event webhook: could not claim due events", cause)),
        Effect.repeat(Schedule.spaced(poll))
      )
    )

    return { deliverDue, run } as const
  }),
  dependencies: [EventWebhooksRepo.Default, EventsGuardLive]
}) {}

/** The delivery of events, in the background of every server process. */
export const EventDeliveryLive = Layer.scopedDiscard(Effect.flatMap(EventDelivery, (delivery) => Effect.forkScoped(delivery.run)))
  .pipe(Layer.provide(EventDelivery.Default))
