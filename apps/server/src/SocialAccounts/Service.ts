import {
  BadRequest,
  Conflict,
  NotFound,
  type SocialAccountCredentials,
  type SocialAccountId,
  type SocialAccountListQuery,
  type TeamId
} from "@postline/domain"
import { Effect, Option, Redacted } from "effect"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { Cursors } from "../Pagination/Cursor.js"
import { pageRequest } from "../Pagination/Keyset.js"
import { credentialsFromJson, credentialsToJson, type ProviderCredentials } from "../Providers/Credentials.js"
import { CredentialsCipher } from "../Secrets/CredentialsCipher.js"
import { OAuthNetworks } from "../Providers/OAuthNetworks.js"
import { SocialProviders } from "../Providers/Registry.js"
import type { ProviderError } from "../Providers/SocialProvider.js"
import { generateSigningSecret } from "../Secrets/SignedWebhook.js"
import { SocialAccountsPolicy } from "./Policy.js"
import { type CheckOutcome, SocialAccountsRepo } from "./Repo.js"
import { TokenRenewal } from "./TokenRenewal.js"

const notFound = (id: SocialAccountId) => new NotFound({ message: `Social account ${id} not found` })

const refused = (error: ProviderError) =>
  new BadRequest({
    message: `The ${error.provider} account could not be connected: ${error.providerMessage}`,
    reason: "credentials_not_verified"
  })

/**
 * A team's social accounts. Credentials are checked with the provider before
 * they are kept, and kept only as one ciphertext. The provider is called
 * outside any transaction (it may take seconds); the permission is checked
 * again, locked, in the transaction that writes.
 */
export class SocialAccounts extends Effect.Service<SocialAccounts>()("SocialAccounts", {
  effect: Effect.gen(function*() {
    const repo = yield* SocialAccountsRepo
    const policy = yield* SocialAccountsPolicy
    const providers = yield* SocialProviders
    const cipher = yield* CredentialsCipher
    const cursors = yield* Cursors
    const networks = yield* OAuthNetworks
    const renewal = yield* TokenRenewal

    const list = (teamId: TeamId, { provider, status, ...query }: SocialAccountListQuery) =>
      authorize(policy.canRead(teamId))(() =>
        Effect.flatMap(
          pageRequest({
            resource: "social accounts",
            filters: { teamId, ...(provider ? { provider } : {}), ...(status ? { status } : {}) }
          }, query),
          (request) =>
            repo.list(teamId, { ...(provider ? { provider } : {}), ...(status ? { status } : {}) }, request)
        )).pipe(Effect.provideService(Cursors, cursors))

    const get = (teamId: TeamId, id: SocialAccountId) =>
      authorize(policy.canRead(teamId))(() =>
        Effect.flatMap(repo.find(teamId, id), Option.match({ onNone: () => notFound(id), onSome: Effect.succeed })))

    const encrypt = (credentials: ProviderCredentials) => Effect.flatMap(credentialsToJson(credentials), cipher.encrypt)

    /** Checks the credentials with their provider; a refusal is a 400 naming the provider's reason. */
    const verified = (credentials: ProviderCredentials) =>
      Effect.mapError(providers.verify(credentials), refused)

    const connect = (teamId: TeamId, input: SocialAccountCredentials) =>
      Effect.gen(function*() {
        yield* authorize(policy.canManage(teamId, { lock: false }))(() => Effect.void)
        const signingSecret = input.provider === "webhook" ? generateSigningSecret() : null
        const credentials: ProviderCredentials = input.provider === "webhook"
          ? { ...input, signingSecret: Redacted.make(signingSecret!) }
          : input
        const profile = yield* verified(credentials)
        const ciphertext = yield* Effect.orDie(encrypt(credentials))
        const account = yield* authorize(policy.canManage(teamId, { lock: true }))(() =>
          repo.insert({ teamId, provider: input.provider, profile, ciphertext })).pipe(transactionally)
        return { ...account, signingSecret }
      })

    /** The account's stored credentials, for whoever may manage it. */
    const storedCredentials = (teamId: TeamId, id: SocialAccountId) =>
      authorize(policy.canManage(teamId, { lock: false }))(() =>
        Effect.flatMap(repo.findCredentials(teamId, id), Option.match({ onNone: () => notFound(id), onSome: Effect.succeed })))

    /** The credentials in a ciphertext, or why this server cannot read them (CredentialsUnreadable). */
    const readCredentials = (ciphertext: string) =>
      Effect.flatMap(cipher.decrypt(ciphertext), (json) => Effect.orDie(credentialsFromJson(json)))

    /**
     * The signing secret a webhook's receiver already checks. One this server cannot read cannot be kept, and
     * PATCH could not show a new one: the webhook is connected again instead.
     */
    const keptSigningSecret = (ciphertext: string) =>
      readCredentials(ciphertext).pipe(
        Effect.map((current) =>
          current.provider === "webhook" ? current.signingSecret : Redacted.make(generateSigningSecret())
        ),
        Effect.catchTag("CredentialsUnreadable", () =>
          new Conflict({
            message: "This server cannot read the webhook's stored signing secret, so it cannot be kept: remove the " +
              "account and connect the webhook again for a new signing secret, or give the server the key its " +
              "credentials were encrypted with",
            reason: "credentials_unreadable"
          }))
      )

    /** Writes what `write` does once the caller is checked again, locked, with the account still there. */
    const whileManaging = <A, E, R>(teamId: TeamId, id: SocialAccountId, write: Effect.Effect<Option.Option<A>, E, R>) =>
      authorize(policy.canManage(teamId, { lock: true }))(() =>
        Effect.flatMap(write, Option.match({ onNone: () => notFound(id), onSome: Effect.succeed }))).pipe(transactionally)

    const update = (teamId: TeamId, id: SocialAccountId, input: SocialAccountCredentials) =>
      Effect.gen(function*() {
        const { account, ciphertext: stored } = yield* storedCredentials(teamId, id)
        if (input.provider !== account.provider) {
          return yield* new BadRequest({
            message: `This is a ${account.provider} account: send ${account.provider} credentials, or connect a new account`,
            reason: "provider_mismatch"
          })
        }
        // Other providers' old credentials are not read: new ones repair an account whose old ones cannot be.
        const credentials: ProviderCredentials = input.provider !== "webhook"
          ? input
          : { ...input, signingSecret: yield* keptSigningSecret(stored) }
        const profile = yield* verified(credentials)
        const ciphertext = yield* Effect.orDie(encrypt(credentials))
        return yield* whileManaging(teamId, id, repo.replaceCredentials(id, profile, ciphertext))
      })

    const verify = (teamId: TeamId, id: SocialAccountId) =>
      Effect.gen(function*() {
        const { ciphertext } = yield* storedCredentials(teamId, id)
        // Credentials this server cannot read need reconnecting, as those the provider refuses do. Tokens about to
        // expire are renewed first, as for a publish.
        const outcome = yield* renewal.open(id, ciphertext).pipe(
          Effect.flatMap(providers.verify),
          Effect.match({
            onSuccess: (profile): CheckOutcome => ({ _tag: "Verified", profile }),
            onFailure: (error): CheckOutcome =>
              error._tag === "CredentialsUnreadable"
                ? { _tag: "Failed", category: "auth", message: error.message }
                : { _tag: "Failed", category: error.category, message: error.providerMessage }
          })
        )
        return yield* whileManaging(teamId, id, repo.recordCheck(id, outcome))
      })

    /**
     * Forgets the account; then, where it was connected by signing in, revokes its tokens at the network, which
     * may fail (the network unreachable) without keeping the account: that is logged.
     */
    const remove = (teamId: TeamId, id: SocialAccountId) =>
      Effect.gen(function*() {
        const { ciphertext } = yield* storedCredentials(teamId, id)
        const removed = yield* whileManaging(teamId, id, repo.remove(teamId, id))
        yield* readCredentials(ciphertext).pipe(
          Effect.flatMap((credentials) => {
            const network = networks.of(credentials.provider)
            return network === undefined ? Effect.void : network.revoke(credentials as never)
          }),
          Effect.catchAll((error) => Effect.logWarning(`Revoking the tokens of removed account ${id} failed: ${error.message}`))
        )
        return removed
      })

    return { list, get, connect, update, verify, remove } as const
  }),
  dependencies: [SocialAccountsRepo.Default, SocialAccountsPolicy.Default, Cursors.Default, TokenRenewal.Default]
}) {}
