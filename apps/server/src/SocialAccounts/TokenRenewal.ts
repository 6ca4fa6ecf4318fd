import type { OAuthProvider, SocialAccountId } from "@postline/domain"
import { Config, Duration, Effect, Layer, Option, Schedule } from "effect"
import { credentialsFromJson, credentialsToJson, type ProviderCredentials } from "../Providers/Credentials.js"
import type { OAuthNetwork } from "../Providers/OAuthNetwork.js"
import { OAuthNetworks } from "../Providers/OAuthNetworks.js"
import { displayNameOf } from "../Providers/Rules.js"
import { ProviderError } from "../Providers/SocialProvider.js"
import { CredentialsCipher } from "../Secrets/CredentialsCipher.js"
import { type ClaimedRenewal, RenewalsRepo } from "./RenewalsRepo.js"

const positive = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: "must be a positive whole number", validation: (n) => n > 0 })
  )

/** How early tokens are renewed, how long a renewal may hold its claim, and how often the worker looks. */
export class TokenRenewalSettings extends Effect.Service<TokenRenewalSettings>()("TokenRenewalSettings", {
  effect: Effect.all({
    aheadSeconds: positive("TOKEN_RENEWAL_AHEAD_SECONDS", 10 * 60),
    pollMs: positive("TOKEN_RENEWAL_POLL_MS", 30_000),
    // Longer than any call to a network may take (PUBLISH_TIMEOUT_SECONDS bounds them): a claim never ends while
    // its renewal could still store what the network answered.
    claimSeconds: positive("TOKEN_RENEWAL_CLAIM_SECONDS", 5 * 60)
  })
}) {}

/** A send renews tokens that expire within this, or within TOKEN_RENEWAL_AHEAD_SECONDS when longer. */
const sendMarginMs = 60_000
const batch = 20
const waitStep = Duration.millis(200)
const retrySeconds = (failures: number) => Math.min(30 * 2 ** failures, 60 * 60)

/**
 * Keeps the access tokens of accounts connected by signing in alive: a worker in every process renews those about
 * to expire, one process per account (RenewalsRepo), and a send that meets a token about to expire renews it once
 * first. A network that refuses for good (`invalid_grant`) makes the account `reconnect_required`; a failure that may
 * pass is tried again later, each time after a longer wait.
 */
export class TokenRenewal extends Effect.Service<TokenRenewal>()("TokenRenewal", {
  effect: Effect.gen(function*() {
    const repo = yield* RenewalsRepo
    const networks = yield* OAuthNetworks
    const cipher = yield* CredentialsCipher
    const settings = yield* TokenRenewalSettings

    const networkOf = (credentials: ProviderCredentials) => networks.of(credentials.provider)

    const read = (ciphertext: string) => Effect.flatMap(cipher.decrypt(ciphertext), (json) => Effect.orDie(credentialsFromJson(json)))

    const refused = (provider: OAuthProvider, why: string) =>
      `${displayNameOf(provider)} refused to renew the account's access (${why}): connect it again with POST ` +
      "/v1/teams/{teamId}/social-accounts/connect"

    /** Renews a claimed account's tokens, keeping what the network answered or why it did not. */
    const renew = (renewal: ClaimedRenewal): Effect.Effect<ProviderCredentials, ProviderError> =>
      Effect.gen(function*() {
        const credentials = yield* read(renewal.ciphertext).pipe(
          Effect.tapError((unreadable) => repo.markRefused(renewal, unreadable.message)),
          Effect.mapError((unreadable) =>
            new ProviderError({ provider: renewal.provider, category: "auth", retryable: false, providerMessage: unreadable.message }))
        )
        const network = networkOf(credentials)
        if (network === undefined) return credentials
        const renewed = yield* network.refresh(credentials as never).pipe(
          Effect.tapError((error) =>
            error.category === "auth" && !error.retryable
              ? repo.markRefused(renewal, refused(network.provider, error.providerMessage))
              : repo.markFailed(renewal, error.category, error.providerMessage, retrySeconds(renewal.failures)))
        )
        const ciphertext = yield* Effect.flatMap(Effect.orDie(credentialsToJson(renewed)), cipher.encrypt)
        yield* repo.storeRenewed(renewal, ciphertext, network.expiresAt(renewed as never))
        return renewed
      })

    /** One look: the accounts due are renewed, a few at a time; one that fails holds up no other. */
    const renewDue = Effect.gen(function*() {
      const due = yield* repo.claimDue(settings.aheadSeconds, settings.claimSeconds, batch)
      yield* Effect.forEach(due, (renewal) =>
        renew(renewal).pipe(
          Effect.catchAll((error) => Effect.logWarning(`Renewing the tokens of account ${renewal.id} failed: ${error.message}`))
        ), { concurrency: 4, discard: true })
      return due.length
    })

    /** Waits for another process's renewal of the account to end, then reads what it stored. */
    const renewedElsewhere = (id: SocialAccountId, provider: OAuthProvider): Effect.Effect<ProviderCredentials, ProviderError> =>
      Effect.gen(function*() {
        const deadline = Date.now() + settings.claimSeconds * 1000
        while (true) {
          const now = yield* repo.current(id)
          if (Option.isNone(now) || now.value.status !== "connected") {
            return yield* new ProviderError({
              provider,
              category: "auth",
              retryable: false,
              providerMessage: "The account's access could not be renewed: connect it again"
            })
          }
          if (!now.value.renewing || Date.now() > deadline) {
            return yield* Effect.mapError(read(now.value.ciphertext), (unreadable) =>
              new ProviderError({ provider, category: "auth", retryable: false, providerMessage: unreadable.message }))
          }
          yield* Effect.sleep(waitStep)
        }
      })

    // A send may take minutes (a video's processing): its tokens must outlast it, and the network's client must not
    // renew them itself meanwhile (atproto's does within its last 40 seconds), which would store nothing.
    const margin = Math.max(sendMarginMs, settings.aheadSeconds * 1000)
    const endsWithin = (network: OAuthNetwork, credentials: ProviderCredentials, ms: number) => {
      const expiresAt = network.expiresAt(credentials as never)
      return expiresAt !== null && expiresAt.getTime() - Date.now() <= ms
    }

    /**
     * Credentials fit to send with: renewed first when their access token expires within the margin. When another
     * process renews them, what it stored; if that renewal failed for now and the token has ended, the send fails as
     * one that may pass later, never as a refusal of the account.
     */
    const fresh = (id: SocialAccountId, credentials: ProviderCredentials): Effect.Effect<ProviderCredentials, ProviderError> =>
      Effect.gen(function*() {
        const network = networkOf(credentials)
        if (network === undefined || !endsWithin(network, credentials, margin)) return credentials
        const claimed = yield* repo.claimOne(id, settings.claimSeconds)
        if (Option.isSome(claimed)) return yield* renew(claimed.value)
        const stored = yield* renewedElsewhere(id, network.provider)
        if (!endsWithin(network, stored, 0)) return stored
        return yield* new ProviderError({
          provider: network.provider,
          category: "transient",
          retryable: true,
          providerMessage: "The account's access token has ended and its renewal has not succeeded yet: tried again later"
        })
      })

    /** An account's stored credentials, read, and renewed first when their access token is about to expire. */
    const open = (id: SocialAccountId, ciphertext: string) => Effect.flatMap(read(ciphertext), (credentials) => fresh(id, credentials))

    return { renewDue, open } as const
  }),
  dependencies: [RenewalsRepo.Default, TokenRenewalSettings.Default]
}) {}

/** The renewal worker of a server process: every TOKEN_RENEWAL_POLL_MS. */
export const TokenRenewalLive = Layer.scopedDiscard(Effect.gen(function*() {
  const renewal = yield* TokenRenewal
  const { pollMs } = yield* TokenRenewalSettings
  const round = renewal.renewDue.pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("Renewing tokens failed", cause))
  )
  yield* Effect.forkScoped(Effect.repeat(round, Schedule.spaced(Duration.millis(pollMs))))
})).pipe(Layer.provideMerge(TokenRenewal.Default), Layer.provide(TokenRenewalSettings.Default))
