import { maxAttemptSummaryLength, type PublishError } from "@postline/domain"
import { Effect, Option } from "effect"
import { CreditsRepo, type Hold } from "../Credits/Repo.js"
import { transactionally } from "../Database/Transaction.js"
import { redactSecretsInUrls } from "../Logging.js"
import { SocialAccountsRepo } from "../SocialAccounts/Repo.js"
import { type AttemptOutcome, AttemptsRepo, type AttemptToSend, unansweredMessage } from "./AttemptsRepo.js"
import { PublishSettings } from "./Settings.js"
import type { Ending, SendOutcome, Sending } from "./Types.js"

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

/** Logs a target that `endTarget` ended failed, once its end is committed. */
export const logEnd = (ending: Pick<Ending, "postId" | "socialAccountId" | "provider">, outcome: AttemptOutcome) =>
  outcome._tag === "Published" ? Effect.void : logTargetFailed(ending, outcome.error)

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

/** What a target's attempts came to when Postline stops trying: a failure that might have passed no longer may. */
const gaveUp = (error: PublishError, attempts: number): PublishError => ({
  ...error,
  message: `${error.message} (gave up after ${attempts} attempts)`,
  retryable: false
})

/** 1, 2, 4 … seconds, at most a minute: how long to wait before the next attempt after a transient failure. */
const backoffSeconds = (ordinal: number) => Math.min(60, 2 ** (ordinal - 1))

/** The end of a target whose last attempt got no answer either. */
export const noAnswerAfter = (attempts: number): PublishError => ({
  category: "unknown",
  message: `No answer after ${attempts} attempts: it may have been published`,
  retryable: false
})

/** Recording what became of a sent target: its attempt, its target's end or wait, its credits and its event. */
export class SendOutcomes extends Effect.Service<SendOutcomes>()("SendOutcomes", {
  effect: Effect.gen(function*() {
    const attempts = yield* AttemptsRepo
    const accounts = yield* SocialAccountsRepo
    const credits = yield* CreditsRepo
    const settings = yield* PublishSettings

    /**
     * The one place a sent target's end is written, whoever ends it (a send, the recovery giving up, an account
     * removed): its attempt and target, with the event of its end for the organization's event webhook (one
     * statement), its credits spent or given back, and an account whose credentials were refused. False when
     * another had ended it: only the one that finishes the attempt settles its credits, a hold ends once.
     */
    const endTarget = (ending: Ending, outcome: AttemptOutcome, summary: string) =>
      Effect.gen(function*() {
        if (!(yield* attempts.finishAttempt(ending.postId, ending.socialAccountId, ending.attempt, outcome, summary))) {
          return false
        }
        const unspent = outcome._tag === "Published" ? Math.min(outcome.unspent ?? 0, ending.hold.amount) : ending.hold.amount
        yield* credits.settle(ending.organizationId, { ...ending.hold, amount: ending.hold.amount - unspent }, "spend")
        yield* credits.settle(ending.organizationId, { ...ending.hold, amount: unspent }, "release")
        if (outcome._tag === "Failed" && outcome.error.category === "auth") {
          yield* accounts.recordAuthFailure(ending.socialAccountId, outcome.error.message)
        }
        return true
      })

    /**
     * Records what became of a sent target (`endTarget`). A send in doubt stays pending for a later attempt;
     * with `retries`, so does a failure that may pass, due again after a backoff or what the provider asked
     * (capped); the target's last attempt ends it either way, not retryable. Without `retries` (post-now), a
     * failure that may pass ends the target and stays retryable: publishing to the account again may succeed.
     */
    const record = (sending: Sending, outcome: SendOutcome, options: { readonly retries: boolean }) =>
      Effect.gen(function*() {
        const { account, attempt, ordinal, postId } = sending
        const last = ordinal >= settings.maxAttempts
        const retryable = outcome._tag !== "Published" && outcome.error.retryable
        const summary = summaryOf(outcome)
        const ending: Ending = { ...sending, socialAccountId: account.id, provider: account.provider }
        const write = Effect.gen(function*() {
          if (!last && outcome._tag === "InDoubt") {
            yield* attempts.leaveInDoubt(postId, account.id, outcome.error)
            return undefined
          }
          if (!last && options.retries && retryable) {
            const delaySeconds = Math.min(outcome.retryAfterSeconds ?? backoffSeconds(ordinal), settings.retryAfterMaxSeconds)
            yield* attempts.recordRetry(postId, account.id, attempt, outcome.error, summary, delaySeconds)
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
        const ended = yield* outcome._tag === "Published" && sending.hold.amount === 0 ? write : transactionally(write)
        if (ended !== undefined) yield* logEnd(ending, ended)
      })

    /** Ends, failed, a target whose last attempt got no answer either (the recovery gives up on it). */
    const giveUp = (left: AttemptToSend) =>
      Effect.gen(function*() {
        const outcome: AttemptOutcome = { _tag: "InDoubt", error: noAnswerAfter(left.ordinal) }
        const hold: Hold = { postId: left.postId, socialAccountId: left.socialAccountId, amount: left.creditsReserved }
        const ended = yield* endTarget({ ...left, hold }, outcome, unansweredMessage)
        return ended ? Option.some(outcome) : Option.none()
      })

    return { endTarget, record, giveUp } as const
  }),
  dependencies: [AttemptsRepo.Default, SocialAccountsRepo.Default, CreditsRepo.Default, PublishSettings.Default]
}) {}
