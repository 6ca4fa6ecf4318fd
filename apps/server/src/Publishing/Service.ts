import {
  Conflict,
  maxAttemptSummaryLength,
  type OrganizationId,
  type PostId,
  type PostNowResponse,
  type PublishOutcome,
  type PublishError,
  type PublishResult,
  type SocialAccountId,
  type TargetAccounts,
  type TeamId
} from "@postline/domain"
import { Duration, Effect, Fiber, Option } from "effect"
import { openAsBlob } from "node:fs"
import * as Path from "node:path"
import { authorize } from "../Access/Authorization.js"
import { scopedWorkDir } from "../Assets/Service.js"
import { MediaSettings } from "../Assets/Settings.js"
import { UrlSigning } from "../Assets/Signing.js"
import { sha256OfStream } from "../Assets/Hashing.js"
import { AssetsRepo } from "../Assets/Repo.js"
import { MediaStorage, type StorageError } from "../Assets/Storage.js"
import { CreditCosts } from "../Credits/Costs.js"
import { CreditEstimates } from "../Credits/Estimates.js"
import { CreditsRepo, type Hold } from "../Credits/Repo.js"
import { transactionally } from "../Database/Transaction.js"
import { Links } from "../Links/Service.js"
import { redactSecretsInUrls } from "../Logging.js"
import { PostsPolicy } from "../Posts/Policy.js"
import { type PostMediumFacts, PostsRepo } from "../Posts/Repo.js"
import { accountNotFound, postNotFound } from "../Posts/Service.js"
import { credentialsFromJson } from "../Providers/Credentials.js"
import { CredentialsCipher } from "../Providers/CredentialsCipher.js"
import { SocialProviders } from "../Providers/Registry.js"
import type { ProviderName } from "../Providers/Credentials.js"
import { ProviderError, type PublishMedia } from "../Providers/SocialProvider.js"
import { type PublishingAccount, SocialAccountsRepo } from "../SocialAccounts/Repo.js"
import { type AttemptToSend, type AttemptOutcome, PublishingRepo, type TargetResult, unansweredMessage } from "./Repo.js"
import { PublishSettings } from "./Settings.js"

/** One account of a publish, as checked before anything is sent: to send (with its price), or failed already. */
type Check =
  | { readonly _tag: "Send"; readonly account: PublishingAccount; readonly credits: number }
  | { readonly _tag: "Refused"; readonly account: PublishingAccount; readonly error: PublishError }

/** A target about to be sent: its attempt is recorded and its credits held. */
export interface Sending {
  readonly organizationId: OrganizationId
  readonly postId: PostId
  readonly content: string
  readonly media: ReadonlyArray<PostMediumFacts>
  readonly account: PublishingAccount
  readonly attempt: number
  /** Which attempt of its publish it is: 1 for the first. */
  readonly ordinal: number
  readonly hold: Hold
}

/** How a send ended, with how long a rate-limited provider asked to wait and the HTTP status it answered. */
export type SendOutcome = AttemptOutcome & { readonly retryAfterSeconds?: number; readonly providerStatus?: number }

/** A target whose attempt is to be ended: what writing its end and settling its credits need. */
export interface Ending {
  readonly organizationId: OrganizationId
  readonly postId: PostId
  readonly socialAccountId: SocialAccountId
  readonly provider: ProviderName | null
  readonly attempt: number
  readonly hold: Hold
}

/**
 * The line a target that ended failed is logged with, once its end is written: the post, the account, its
 * provider and why; never credentials (a provider's words name no secret, and URLs in them are redacted).
 */
export const logTargetFailed = (
  target: Pick<Ending, "postId" | "socialAccountId" | "provider">,
  error: PublishError
) =>
  Effect.logWarning("Publishing: a post failed on an account").pipe(Effect.annotateLogs({
    postId: target.postId,
    socialAccountId: target.socialAccountId,
    provider: target.provider ?? "unknown",
    category: error.category,
    error: error.message,
    retryable: error.retryable
  }))

/** What an attempt keeps of the provider's answer: at most `maxAttemptSummaryLength` characters, URLs' secrets redacted. */
export const summaryOf = (outcome: SendOutcome): string => {
  const text = outcome._tag === "Published"
    ? `Published${outcome.published.externalId ? ` as ${outcome.published.externalId}` : ""}` +
      (outcome.published.url ? ` at ${outcome.published.url}` : "")
    : outcome.providerStatus !== undefined && !outcome.error.message.includes(String(outcome.providerStatus))
    ? `HTTP ${outcome.providerStatus}: ${outcome.error.message}`
    : outcome.error.message
  const characters = [...redactSecretsInUrls(text)]
  return characters.length <= maxAttemptSummaryLength
    ? characters.join("")
    : `${characters.slice(0, maxAttemptSummaryLength - 1).join("")}…`
}

/** Only what may pass when tried later is retryable, whatever said otherwise. */
const mayPass = (error: PublishError): PublishError =>
  error.retryable && error.category !== "transient" && error.category !== "rate_limited" ? { ...error, retryable: false } : error

/** A target as the publish's answer shows it. */
const resultOf = (target: TargetResult): PublishResult => ({
  socialAccountId: target.socialAccountId,
  status: target.status,
  externalId: target.externalId,
  url: target.url,
  error: target.errorCategory === null
    ? null
    : { category: target.errorCategory, message: target.errorMessage ?? "", retryable: target.errorRetryable ?? false },
  creditsSpent: target.creditsSpent
})

/** What a publish or a schedule came to, from how many of its accounts failed. */
export const outcomeOf = (failed: number, all: number): PublishOutcome =>
  failed === 0 ? "none_failed" : failed === all ? "all_failed" : "partially_failed"

/** Targets of a publish, in the order of the request, with what the publish came to. */
const answerOf = (postId: PostId, ids: ReadonlyArray<SocialAccountId>, found: ReadonlyArray<TargetResult>): PostNowResponse => {
  const byId = new Map(found.map((target) => [target.socialAccountId as string, resultOf(target)]))
  const results = ids.map((id) => byId.get(id)!)
  const failed = results.filter((result) => result.status === "failed").length
  return {
    postId,
    results,
    outcome: outcomeOf(failed, results.length)
  }
}

/** Whether a post-now's answer is its last word: no account of it is still in doubt. */
export const isFinalAnswer = (answer: PostNowResponse) => answer.results.every((result) => result.status !== "pending")

/** What a target's attempts came to when Postline stops trying: a failure that might have passed no longer may. */
const gaveUp = (error: PublishError, attempts: number): PublishError => ({
  ...error,
  message: `${error.message} (gave up after ${attempts} attempts)`,
  retryable: false
})

// Links to a post's media outlive any retry of its sends, so that a webhook's receiver may fetch them later.
const publishedMediaUrlSeconds = 7 * 24 * 3600

/** 1, 2, 4 … seconds, at most a minute: how long to wait before the next attempt after a transient failure. */
const backoffSeconds = (ordinal: number) => Math.min(60, 2 ** (ordinal - 1))

/** The end of a target whose last attempt got no answer either. */
export const noAnswerAfter = (attempts: number): PublishError => ({
  category: "unknown",
  message: `No answer after ${attempts} attempts: it may have been published`,
  retryable: false
})

const asPublishError = (error: ProviderError): PublishError => ({
  category: error.category,
  message: error.providerMessage,
  retryable: error.retryable
})

/**
 * Publishing a post to accounts: the checks before anything is sent, the
 * credits held for what is sent, the provider calls, and the record of each.
 * `publishTarget` is the one path by which a target is sent, whoever sends it (post-now here, the scheduler
 * and the recovery through `sendAgain`).
 */
export class Publishing extends Effect.Service<Publishing>()("Publishing", {
  scoped: Effect.gen(function*() {
    const posts = yield* PostsRepo
    const targets = yield* PublishingRepo
    const accounts = yield* SocialAccountsRepo
    const credits = yield* CreditsRepo
    const costs = yield* CreditCosts
    const providers = yield* SocialProviders
    const cipher = yield* CredentialsCipher
    const policy = yield* PostsPolicy
    const estimates = yield* CreditEstimates
    const links = yield* Links
    const settings = yield* PublishSettings
    const storage = yield* MediaStorage
    const assets = yield* AssetsRepo
    const signing = yield* UrlSigning
    const mediaSettings = yield* MediaSettings
    // A post-now's sends run in this scope, not in its request: once credits are held, a client that goes away
    // stops nothing.
    const scope = yield* Effect.scope

    /** The accounts, all of the team's, in the order asked: 404 naming the first that is not. */
    const accountsOf = (teamId: TeamId, ids: ReadonlyArray<SocialAccountId>) =>
      Effect.flatMap(accounts.forPublishing(teamId, ids), (found) => {
        const byId = new Map(found.map((account) => [account.id as string, account]))
        const missing = ids.find((id) => !byId.has(id))
        return missing === undefined ? Effect.succeed(ids.map((id) => byId.get(id)!)) : accountNotFound(missing)
      })

    /** What the provider would say before anything is sent: an account to reconnect, or a text or media it refuses. */
    const check = (content: string, media: ReadonlyArray<PostMediumFacts>) => (account: PublishingAccount): Check => {
      if (account.status === "reconnect_required") {
        return {
          _tag: "Refused",
          account,
          error: { category: "auth", message: "The account needs reconnecting: update its credentials", retryable: false }
        }
      }
      const provider = providers.get(account.provider)
      const problems = [
        ...provider.validate(content, account.contentLimits),
        ...provider.validateMedia(media, account.contentLimits),
        // A webhook gets its media as links, which its receiver must be able to follow.
        ...(account.provider === "webhook" && media.length > 0 && mediaSettings.base === null
          ? [{ code: "media" as const, message: "A webhook gets media as links: the server needs a PUBLIC_URL to send them" }]
          : [])
      ]
      return problems.length > 0
        ? {
          _tag: "Refused",
          account,
          error: { category: "invalid_content", message: problems.map((problem) => problem.message).join("; "), retryable: false }
        }
        : { _tag: "Send", account, credits: costs.costOf(account.provider) }
    }

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
     * The one place a sent target's end is written, whoever ends it (a send, the recovery giving up, an account
     * removed): its attempt and target, with the event of its end for the organization's event webhook (one
     * statement), its credits spent or given back, and an account whose credentials were refused. False when
     * another had ended it: only the one that finishes the attempt settles its credits, a hold ends once.
     */
    const endTarget = (ending: Ending, outcome: AttemptOutcome, summary: string) =>
      Effect.gen(function*() {
        if (!(yield* targets.finishAttempt(ending.postId, ending.socialAccountId, ending.attempt, outcome, summary))) {
          return false
        }
        yield* credits.settle(ending.organizationId, ending.hold, outcome._tag === "Published" ? "spend" : "release")
        if (outcome._tag === "Failed" && outcome.error.category === "auth") {
          yield* accounts.recordAuthFailure(ending.socialAccountId, outcome.error.message)
        }
        return true
      })

    /** Logs a target that `endTarget` ended failed, once its end is committed. */
    const logEnd = (ending: Pick<Ending, "postId" | "socialAccountId" | "provider">, outcome: AttemptOutcome) =>
      outcome._tag === "Published" ? Effect.void : logTargetFailed(ending, outcome.error)

    /**
     * Sends one target and records what became of it (`endTarget`). The
     * provider gets a key derived from the post and the account, the same on
     * every attempt, so that it can tell a repeat. A send in doubt stays
     * pending for a later attempt; with `retries`, so does a failure that may
     * pass, due again after a backoff or what the provider asked (capped);
     * the target's last attempt ends it either way, not retryable. Without
     * `retries` (post-now), a failure that may pass ends the target and stays
     * retryable: publishing to the account again may succeed.
     */
    const publishTarget = (sending: Sending, options: { readonly retries: boolean }) =>
      Effect.gen(function*() {
        const { account, attempt, ordinal, postId } = sending
        const outcome = yield* send(sending)
        const last = ordinal >= settings.maxAttempts
        const retryable = outcome._tag !== "Published" && outcome.error.retryable
        const summary = summaryOf(outcome)
        const ending: Ending = { ...sending, socialAccountId: account.id, provider: account.provider }
        const record = Effect.gen(function*() {
          if (!last && outcome._tag === "InDoubt") {
            yield* targets.leaveInDoubt(postId, account.id, outcome.error)
            return undefined
          }
          if (!last && options.retries && retryable) {
            const delaySeconds = Math.min(outcome.retryAfterSeconds ?? backoffSeconds(ordinal), settings.retryAfterMaxSeconds)
            yield* targets.recordRetry(postId, account.id, attempt, outcome.error, summary, delaySeconds)
            return undefined
          }
          const final: AttemptOutcome = outcome._tag === "InDoubt"
            ? { ...outcome, error: noAnswerAfter(ordinal) }
            : outcome._tag === "Failed" && retryable && last
            ? { ...outcome, error: gaveUp(outcome.error, ordinal) }
            : outcome._tag === "Failed"
            ? { ...outcome, error: mayPass(outcome.error) }
            : outcome
          return (yield* endTarget(ending, final, summary)) ? final : undefined
        })
        // A publish that holds no credits (a webhook's, by default) is recorded in one statement: no transaction.
        const ended = yield* outcome._tag === "Published" && sending.hold.amount === 0 ? record : transactionally(record)
        if (ended !== undefined) yield* logEnd(ending, ended)
        return outcome
      })

    /** Ends, failed, a target whose last attempt got no answer either (the recovery gives up on it). */
    const giveUp = (left: AttemptToSend) =>
      Effect.gen(function*() {
        const outcome: AttemptOutcome = { _tag: "InDoubt", error: noAnswerAfter(left.ordinal) }
        const hold: Hold = { postId: left.postId, socialAccountId: left.socialAccountId, amount: left.creditsReserved }
        const ended = yield* endTarget({ ...left, hold }, outcome, unansweredMessage)
        return ended ? Option.some(outcome) : Option.none()
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
          if (yield* transactionally(endTarget(ending, removed, removed.error.message))) yield* logEnd(ending, removed)
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

    /**
     * Checks, holds credits and records every target in one transaction with
     * the post locked, so that two publishes of one post take turns: 404, 409 or
     * 402 leave nothing behind. Publishing now starts an attempt per target to
     * send; scheduling leaves them pending and due at `at`, under a new schedule
     * version, and gives back what an earlier schedule held. Answers the checks
     * and the targets to send now.
     */
    const prepare = (
      teamId: TeamId,
      postId: PostId,
      chosen: ReadonlyArray<PublishingAccount>,
      when: { readonly _tag: "Now" } | { readonly _tag: "At"; readonly at: Date }
    ) =>
      authorize(policy.canPublish(teamId, { lock: true }))((team) =>
        Effect.gen(function*() {
          const post = Option.getOrUndefined(yield* posts.lockForPublishing(teamId, postId))
          if (post === undefined) return yield* postNotFound(postId)
          const scheduled = post.status === "scheduled"
          if (scheduled) {
            if (when._tag === "Now") {
              return yield* new Conflict({
                message: `Post ${postId} is scheduled: unschedule it first, or schedule it again for another time`
              })
            }
            yield* releaseWaiting(team.organizationId, postId)
          }
          if (when._tag === "At" && post.status === "publishing") {
            return yield* new Conflict({ message: `Post ${postId} is being published: schedule it once it is done` })
          }
          const [busy] = yield* targets.busyTargets(postId, chosen.map((account) => account.id))
          if (busy !== undefined) {
            return yield* new Conflict({
              message: `Post ${postId} was already ${busy.status === "published" ? "published" : "being published"} to ` +
                `account ${busy.socialAccountId}: publish again only to the accounts that failed`
            })
          }
          // Providers check and receive the text as sent: with its links tracked, the short links.
          const text = yield* links.linksFor({ ...post, id: postId, teamId })
          const media = yield* posts.mediaFor(postId, { lock: true })
          const checks = chosen.map(check(text, media))
          const toSend = checks.filter((checked) => checked._tag === "Send")
          const holds = toSend.map((checked): Hold => ({ postId, socialAccountId: checked.account.id, amount: checked.credits }))
          yield* credits.reserve(team.organizationId, holds)
          for (const checked of checks) {
            if (checked._tag === "Refused") yield* targets.failBeforeSending(postId, checked.account.id, checked.error)
          }
          if (when._tag === "At") {
            for (const checked of toSend) yield* targets.awaitTarget(postId, checked.account.id, checked.credits, when.at)
            if (toSend.length > 0) yield* targets.markScheduled(postId, when.at)
            yield* targets.refreshStatus(postId)
            return { checks, sending: [] }
          }
          const sending = yield* Effect.forEach(toSend, (checked, index) =>
            Effect.map(targets.startAttempt(postId, checked.account.id, checked.credits, false), (started): Sending => ({
              organizationId: team.organizationId,
              postId,
              content: text,
              media,
              account: checked.account,
              ...started,
              hold: holds[index]
            })))
          yield* targets.refreshStatus(postId)
          return { checks, sending }
        })).pipe(
        transactionally,
        // What failed before anything was sent failed for good (an account to reconnect, a text refused).
        Effect.tap(({ checks }) =>
          Effect.forEach(checks, (checked) =>
            checked._tag === "Refused"
              ? logTargetFailed({ postId, socialAccountId: checked.account.id, provider: checked.account.provider }, checked.error)
              : Effect.void, { discard: true })
        )
      )

    /**
     * Gives back what the targets waiting for a schedule hold, and forgets them (those sent before are failed
     * again) and the schedule.
     */
    const releaseWaiting = (organizationId: OrganizationId, postId: PostId) =>
      Effect.gen(function*() {
        for (const waiting of yield* targets.waitingTargets(postId)) {
          yield* credits.settle(organizationId, { postId, socialAccountId: waiting.socialAccountId, amount: waiting.creditsReserved }, "release")
          yield* (waiting.sentBefore ? targets.stopWaiting : targets.dropTarget)(postId, waiting.socialAccountId)
        }
        yield* targets.clearSchedule(postId)
      })

    const postNow = (teamId: TeamId, postId: PostId, { socialAccountIds }: TargetAccounts) =>
      authorize(policy.canPublish(teamId, { lock: false }))(() =>
        Effect.gen(function*() {
          const chosen = yield* accountsOf(teamId, socialAccountIds)
          const { sending } = yield* prepare(teamId, postId, chosen, { _tag: "Now" })
          // All at once (at most maxTargetsPerPublish), so that the answer comes within one timeout.
          yield* Effect.forEach(sending, (target) => publishTarget(target, { retries: false }), {
            concurrency: "unbounded",
            discard: true
          }).pipe(
            Effect.zipRight(targets.refreshStatus(postId)),
            Effect.forkIn(scope),
            Effect.flatMap(Fiber.join)
          )
          return answerOf(postId, socialAccountIds, yield* targets.resultsOf(postId, socialAccountIds))
        }))

    /**
     * The answer of a post-now that began at `since` and has ended, read from its targets: none while any is
     * still being sent or was not recorded since (its request ended before it held anything).
     */
    const postNowAnswer = (teamId: TeamId, postId: PostId, { socialAccountIds }: TargetAccounts, since: Date) =>
      authorize(policy.canPublish(teamId, { lock: false }))(() =>
        Effect.map(targets.resultsOf(postId, socialAccountIds), (found) =>
          found.length === socialAccountIds.length &&
            found.every((target) => target.status !== "pending" && target.updatedAt.getTime() >= since.getTime())
            ? Option.some(answerOf(postId, socialAccountIds, found))
            : Option.none()))

    /** What `postNow` would hold for these accounts, and whether the organization has it: reads only. */
    const estimate = (teamId: TeamId, postId: PostId, { socialAccountIds }: TargetAccounts) =>
      authorize(policy.canRead(teamId))((team) =>
        Effect.gen(function*() {
          const post = Option.getOrUndefined(yield* posts.find(teamId, postId))
          if (post === undefined) return yield* postNotFound(postId)
          const chosen = yield* authorize(policy.canPublish(teamId, { lock: false }))(() => accountsOf(teamId, socialAccountIds))
          const text = links.preview(post.content, post.linkTracking ?? team.linkTrackingDefault)
          const media = yield* authorize(policy.canPublish(teamId, { lock: false }))(() => posts.mediaFor(postId, { lock: false }))
          const perAccount = chosen.map(check(text, media)).map((checked) => ({
            socialAccountId: checked.account.id,
            credits: checked._tag === "Send" ? checked.credits : 0
          }))
          return yield* estimates.estimate(team.organizationId, "Publishing", perAccount)
        }))

    return { postNow, postNowAnswer, estimate, accountsOf, prepare, releaseWaiting, sendAgain, sendTo, giveUp } as const
  }),
  dependencies: [
    PostsRepo.Default,
    PublishingRepo.Default,
    AssetsRepo.Default,
    SocialAccountsRepo.Default,
    CreditsRepo.Default,
    CreditCosts.Default,
    PublishSettings.Default,
    PostsPolicy.Default,
    CreditEstimates.Default,
    Links.Default,
    UrlSigning.Default,
    MediaSettings.Default
  ]
}) {}
