import type { PublishError } from "@postline/domain"
import { Duration, Effect } from "effect"
import { openAsBlob } from "node:fs"
import * as Path from "node:path"
import { scopedWorkDir } from "../Assets/Service.js"
import { MediaSettings } from "../Assets/Settings.js"
import { UrlSigning } from "../Assets/Signing.js"
import { sha256OfStream } from "../Assets/Hashing.js"
import { AssetsRepo } from "../Assets/Repo.js"
import { MediaStorage, type StorageError } from "../Assets/Storage.js"
import { CreditCosts } from "../Credits/Costs.js"
import type { Hold } from "../Credits/Repo.js"
import { transactionally } from "../Database/Transaction.js"
import type { BodyPart } from "../Posts/BodyRepo.js"
import type { PostMediumFacts } from "../Posts/Repo.js"
import { TokenRenewal } from "../SocialAccounts/TokenRenewal.js"
import { SocialProviders } from "../Providers/Registry.js"
import type { ProviderName } from "../Providers/Credentials.js"
import {
  type PartReference,
  type Published,
  ProviderError,
  type PublishMedia,
  type SocialAccountOf
} from "../Providers/SocialProvider.js"
import type { PublishingAccount } from "../SocialAccounts/PublishingAccount.js"
import { SocialAccountsRepo } from "../SocialAccounts/Repo.js"
import type { AttemptToSend } from "./AttemptsRepo.js"
import { PublishBodies } from "./Bodies.js"
import { logEnd, SendOutcomes } from "./Outcome.js"
import { SentPartsRepo } from "./SentPartsRepo.js"
import { PublishSettings } from "./Settings.js"
import type { Ending, SendOutcome, Sending } from "./Types.js"

// Links to a post's media outlive any retry of its sends, so that a webhook's receiver may fetch them later.
const publishedMediaUrlSeconds = 7 * 24 * 3600

const asPublishError = (error: ProviderError): PublishError => ({
  category: error.category,
  message: error.providerMessage,
  retryable: error.retryable
})

/**
 * Sending one target to its provider, and recording what became of it (Outcome.ts). `publishTarget` is the
 * one path by which a target is sent, whoever sends it (post-now, the scheduler through `sendTo` and the
 * recovery through `sendAgain`).
 */
export class TargetSender extends Effect.Service<TargetSender>()("TargetSender", {
  effect: Effect.gen(function*() {
    const bodies = yield* PublishBodies
    const sentParts = yield* SentPartsRepo
    const accounts = yield* SocialAccountsRepo
    const outcomes = yield* SendOutcomes
    const providers = yield* SocialProviders
    const renewal = yield* TokenRenewal
    const settings = yield* PublishSettings
    const storage = yield* MediaStorage
    const assets = yield* AssetsRepo
    const signing = yield* UrlSigning
    const mediaSettings = yield* MediaSettings
    const costs = yield* CreditCosts

    /** An answer that did not come within the timeout: the call may have gone through. */
    const noAnswer = { _tag: "NoAnswer" } as const
    const noAnswerMessage = `No answer within ${Duration.format(settings.timeout)}: it may have been published; ` +
      "Postline tries again with the same provider key"

    /** One call of the provider, cut short by the timeout, whoever runs the send. */
    const timed = <A>(call: Effect.Effect<A, ProviderError>) =>
      call.pipe(Effect.interruptible, Effect.timeoutFail({ duration: settings.timeout, onTimeout: () => noAnswer }))

    /**
     * Sends what the account gets, part after part: each part the provider took is recorded at once, and a part
     * recorded before (a retry, the recovery after a crash) is not sent again; its provider key is the same on
     * every attempt, so a part that went out unrecorded is found, not repeated. A provider that takes a thread
     * whole gets it in one call. The first comment follows; its failure is recorded and the post stands.
     */
    const sendParts = (sending: Sending, account: SocialAccountOf) =>
      Effect.gen(function*() {
        const { body, postId } = sending
        const provider = providers.get(sending.account.provider)
        const keyOf = (position: number) =>
          `${postId}:${account.id}${position === 1 ? "" : position === 0 ? ":comment" : `:${position}`}`
        const done = yield* sentParts.sentParts(postId, sending.account.id)
        const toSend = (part: BodyPart) =>
          Effect.map(withStoredHashes(provider.name, part.media), (hashed) => ({
            text: part.content,
            media: publishMedia(provider.name, hashed)
          }))
        const record = (position: number, published: Published) =>
          Effect.as(sentParts.recordPublished(postId, sending.account.id, position, published), published)
        const first = done.get(1)
        if (provider.threads === "whole") {
          if (first !== undefined) return { published: { externalId: first.externalId!, url: first.url }, unspent: 0 }
          const [head, ...rest] = yield* Effect.forEach(body.parts, toSend)
          const firstComment = body.firstComment === null ? null : yield* toSend(body.firstComment)
          const published = yield* timed(provider.publish(account, {
            postId,
            idempotencyKey: keyOf(1),
            ...head!,
            rest: { thread: rest, firstComment }
          }))
          for (const part of [...body.parts, ...(body.firstComment ? [body.firstComment] : [])]) {
            yield* record(part.position, published)
          }
          return { published, unspent: 0 }
        }
        let thread: { readonly root: PartReference; parent: PartReference } | undefined
        let published: Published | undefined
        for (const part of body.parts) {
          const sent = done.get(part.position)
          const answer = sent !== undefined ? { externalId: sent.externalId!, url: sent.url, reference: sent.reference ?? undefined }
            : yield* Effect.flatMap(
              timed(Effect.flatMap(toSend(part), (ready) =>
                provider.publish(account, {
                  postId,
                  idempotencyKey: keyOf(part.position),
                  ...ready,
                  ...(thread ? { replyTo: thread } : {})
                }))),
              (answer) => record(part.position, answer)
            )
          published ??= answer
          const reference: PartReference = { externalId: answer.externalId, reference: answer.reference ?? null }
          thread = thread ? { root: thread.root, parent: reference } : { root: reference, parent: reference }
        }
        const commented = body.firstComment === null || done.has(0)
          ? done.get(0)?.status !== "failed"
          : yield* timed(Effect.flatMap(toSend(body.firstComment), (ready) =>
            provider.publish(account, { postId, idempotencyKey: keyOf(0), ...ready, replyTo: thread! }))).pipe(
            Effect.flatMap((answer) => Effect.as(record(0, answer), true)),
            Effect.catchAll((error) =>
              Effect.as(
                sentParts.recordFailedComment(
                  postId,
                  sending.account.id,
                  error._tag === "NoAnswer" ? "No answer in time: it may have been posted" : error.providerMessage
                ),
                false
              ))
          )
        // A first comment that did not go out is not paid for.
        return { published: published!, unspent: commented ? 0 : costs.costOf(provider.name) }
      })

    /** What sending the target came to: published (its first part), failed, or in doubt when a part got no answer. */
    const send = (sending: Sending) =>
      renewal.open(sending.account.id, sending.account.ciphertext).pipe(
        Effect.flatMap((credentials) => sendParts(sending, { id: sending.account.id, credentials })),
        Effect.map(({ published, unspent }): SendOutcome => ({ _tag: "Published", published, unspent })),
        // Nothing was sent: the account needs reconnecting, as when a provider refuses its credentials.
        Effect.catchTag("CredentialsUnreadable", ({ message }) =>
          Effect.succeed<SendOutcome>({ _tag: "Failed", error: { category: "auth", message, retryable: false } })),
        Effect.catchTag("NoAnswer", () =>
          Effect.succeed<SendOutcome>({
            _tag: "InDoubt",
            error: { category: "transient", message: noAnswerMessage, retryable: true }
          })),
        Effect.catchAll((error) =>
          Effect.succeed<SendOutcome>({
            _tag: "Failed",
            error: asPublishError(error),
            ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
            ...(error.providerStatus !== undefined ? { providerStatus: error.providerStatus } : {})
          })
        ),
        // A bug of ours must not leave the target pending with its credits held: it fails, and is logged.
        Effect.catchAllDefect((defect) =>
          Effect.as(Effect.logError("Publishing failed unexpectedly", defect), {
            _tag: "Failed",
            error: { category: "unknown", message: "Postline failed to send this post", retryable: false }
          } satisfies SendOutcome as SendOutcome)
        )
      )

    const unreadableMedia = (provider: ProviderName, error: StorageError) =>
      new ProviderError({
        provider,
        category: "transient",
        retryable: true,
        providerMessage: `Postline could not read the post's media from its storage: ${error.message}`
      })

    /**
     * The media with the hashes of their stored copies, the files their links serve: an image stored before
     * those were recorded is read from storage once, and its hash recorded.
     */
    const withStoredHashes = (provider: ProviderName, media: ReadonlyArray<PostMediumFacts>) =>
      Effect.forEach(media, (medium) =>
        medium.sha256 !== null
          ? Effect.succeed({ ...medium, sha256: medium.sha256 })
          : sha256OfStream(storage.read(medium.storageKey)).pipe(
            Effect.tap((sha256) => assets.recordStoredSha256(medium.assetId, sha256)),
            Effect.map((sha256) => ({ ...medium, sha256 })),
            Effect.mapError((error) => unreadableMedia(provider, error))
          ))

    /**
     * The media as a provider receives them: links signed for a week, and each file copied from storage to a
     * temporary file when the provider opens it, read from there as a Blob and removed when it is done.
     */
    const publishMedia = (
      provider: ProviderName,
      media: ReadonlyArray<PostMediumFacts & { readonly sha256: string }>
    ): ReadonlyArray<PublishMedia> => {
      const expiresAt = new Date(Date.now() + publishedMediaUrlSeconds * 1000)
      return media.map(({ storageKey, teamId, ...facts }) => {
        const signed = signing.sign(teamId, facts.assetId, "original", expiresAt)
        return {
          ...facts,
          url: signed.url,
          urlExpiresAt: signed.expiresAt.toISOString(),
          open: Effect.gen(function*() {
            const path = Path.join(yield* scopedWorkDir(mediaSettings.workDir), "medium")
            yield* storage.copyToFile(storageKey, path)
            return yield* Effect.promise(() => openAsBlob(path, { type: facts.contentType }))
          }).pipe(Effect.mapError((error) => unreadableMedia(provider, error)))
        }
      })
    }

    /**
     * Sends one target and records what became of it (`SendOutcomes.record`). The provider gets a key derived
     * from the post and the account, the same on every attempt, so that it can tell a repeat.
     */
    const publishTarget = (sending: Sending, options: { readonly retries: boolean }) =>
      Effect.gen(function*() {
        const outcome = yield* send(sending)
        yield* outcomes.record(sending, outcome, options)
        return outcome
      })

    /**
     * Sends a target again under `attempt`, to its account as it stands now (`account`, read with the
     * target): an account removed meanwhile fails it, its credits given back.
     */
    const sendTo = (
      target: AttemptToSend,
      account: PublishingAccount | undefined,
      options: { readonly retries: boolean }
    ) =>
      Effect.gen(function*() {
        const { attempt, ordinal, organizationId, postId, socialAccountId, teamId } = target
        const hold: Hold = { postId, socialAccountId, amount: target.creditsReserved }
        if (account === undefined) {
          const removed: SendOutcome = {
            _tag: "Failed",
            error: { category: "unknown", message: "The account was removed before the post was sent", retryable: false }
          }
          const ending: Ending = { ...target, hold }
          if (yield* transactionally(outcomes.endTarget(ending, removed, removed.error.message))) yield* logEnd(ending, removed)
          return removed
        }
        // The texts as checked when the post was sent or scheduled: their links tracked with the codes made then.
        const post = { id: postId, teamId, content: target.content, linkTracking: target.linkTracking }
        const body = (yield* bodies.bodiesOf(post, [socialAccountId], { lock: false })).get(socialAccountId)!
        return yield* publishTarget({ organizationId, postId, body, account, attempt, ordinal, hold }, options)
      })

    /** `sendTo` the target's account, read now. */
    const sendAgain = (target: AttemptToSend, options: { readonly retries: boolean }) =>
      Effect.flatMap(
        accounts.forPublishing(target.teamId, [target.socialAccountId]),
        ([account]) => sendTo(target, account, options)
      )

    return { publishTarget, sendTo, sendAgain } as const
  }),
  dependencies: [
    PublishBodies.Default,
    SentPartsRepo.Default,
    SocialAccountsRepo.Default,
    SendOutcomes.Default,
    PublishSettings.Default,
    AssetsRepo.Default,
    UrlSigning.Default,
    MediaSettings.Default,
    CreditCosts.Default,
    TokenRenewal.Default
  ]
}) {}
