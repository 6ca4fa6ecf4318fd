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
import type { Hold } from "../Credits/Repo.js"
import { transactionally } from "../Database/Transaction.js"
import { Links } from "../Links/Service.js"
import { type PostMediumFacts, PostsRepo } from "../Posts/Repo.js"
import { credentialsFromJson } from "../Providers/Credentials.js"
import { CredentialsCipher } from "../Secrets/CredentialsCipher.js"
import { SocialProviders } from "../Providers/Registry.js"
import type { ProviderName } from "../Providers/Credentials.js"
import { ProviderError, type PublishMedia } from "../Providers/SocialProvider.js"
import type { PublishingAccount } from "../SocialAccounts/PublishingAccount.js"
import { SocialAccountsRepo } from "../SocialAccounts/Repo.js"
import type { AttemptToSend } from "./AttemptsRepo.js"
import { logEnd, SendOutcomes } from "./Outcome.js"
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
    const posts = yield* PostsRepo
    const accounts = yield* SocialAccountsRepo
    const outcomes = yield* SendOutcomes
    const providers = yield* SocialProviders
    const cipher = yield* CredentialsCipher
    const links = yield* Links
    const settings = yield* PublishSettings
    const storage = yield* MediaStorage
    const assets = yield* AssetsRepo
    const signing = yield* UrlSigning
    const mediaSettings = yield* MediaSettings

    /** The provider's answer to one send, within the timeout, which cuts the send short and leaves it in doubt. */
    const send = ({ account, content, media, postId }: Sending): Effect.Effect<SendOutcome> =>
      Effect.flatMap(cipher.decrypt(account.ciphertext), (json) => Effect.orDie(credentialsFromJson(json))).pipe(
        Effect.flatMap((credentials) =>
          Effect.flatMap(withStoredHashes(account.provider, media), (hashed) =>
            providers.publish(
              { id: account.id, credentials },
              { postId, text: content, idempotencyKey: `${postId}:${account.id}`, media: publishMedia(account.provider, hashed) }
            ))
        ),
        Effect.map((published): SendOutcome => ({ _tag: "Published", published })),
        // Nothing was sent: the account needs reconnecting, as when a provider refuses its credentials.
        Effect.catchTag("CredentialsUnreadable", ({ message }) =>
          Effect.succeed<SendOutcome>({ _tag: "Failed", error: { category: "auth", message, retryable: false } })),
        Effect.catchAll((error) =>
          Effect.succeed({
            _tag: "Failed" as const,
            error: asPublishError(error),
            ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
            ...(error.providerStatus !== undefined ? { providerStatus: error.providerStatus } : {})
          })
        ),
        // A bug of ours must not leave the target pending with its credits held: it fails, and is logged.
        Effect.catchAllDefect((defect) =>
          Effect.as(Effect.logError("Publishing failed unexpectedly", defect), {
            _tag: "Failed" as const,
            error: { category: "unknown" as const, message: "Postline failed to send this post", retryable: false }
          })
        ),
        // Whoever runs the send, the timeout can cut it.
        Effect.interruptible,
        Effect.timeoutTo({
          duration: settings.timeout,
          onSuccess: (outcome) => outcome,
          onTimeout: (): SendOutcome => ({
            _tag: "InDoubt",
            error: {
              category: "transient",
              message: `No answer within ${Duration.format(settings.timeout)}: it may have been published; ` +
                "Postline tries again with the same provider key",
              retryable: true
            }
          })
        })
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
        // The text as checked when the post was sent or scheduled: its links tracked with the codes made then.
        const content = yield* links.linksFor({ id: postId, teamId, content: target.content, linkTracking: target.linkTracking })
        const media = yield* posts.mediaFor(postId, { lock: false })
        return yield* publishTarget({ organizationId, postId, content, media, account, attempt, ordinal, hold }, options)
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
    PostsRepo.Default,
    SocialAccountsRepo.Default,
    SendOutcomes.Default,
    Links.Default,
    PublishSettings.Default,
    AssetsRepo.Default,
    UrlSigning.Default,
    MediaSettings.Default
  ]
}) {}
