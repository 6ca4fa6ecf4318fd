import {
  type AccountConnect,
  BadRequest,
  Caller,
  Conflict,
  type ConnectId,
  connectLifetimeSeconds,
  CurrentCaller,
  NotFound,
  type OAuthProvider,
  type SocialAccount,
  type StartConnect,
  type TeamId
} from "@postline/domain"
import { Effect, Option } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { authorize } from "../Access/Authorization.js"
import { transactionally } from "../Database/Transaction.js"
import { credentialsToJson } from "../Providers/Credentials.js"
import { OAuthNetworks } from "../Providers/OAuthNetworks.js"
import { displayNameOf } from "../Providers/Rules.js"
import { SocialProviders } from "../Providers/Registry.js"
import { ProviderError } from "../Providers/SocialProvider.js"
import { CredentialsCipher } from "../Secrets/CredentialsCipher.js"
import { SocialAccountsPolicy } from "../SocialAccounts/Policy.js"
import { SocialAccountsRepo } from "../SocialAccounts/Repo.js"
import { type ClaimedConnect, AccountConnectsRepo, type ConnectRow, type Starter } from "./Repo.js"
import { isLoopback, returnToAllowed } from "./ReturnTo.js"

const hashOf = (state: string) => createHash("sha256").update(state).digest("hex")

/** How a callback ended, for the page (or the redirect) that answers it. */
export type CallbackOutcome =
  | { readonly _tag: "Connected"; readonly connectId: ConnectId; readonly account: SocialAccount; readonly returnTo: string | null }
  | { readonly _tag: "Failed"; readonly connectId: ConnectId; readonly message: string; readonly returnTo: string | null }
  | { readonly _tag: "Refused"; readonly message: string }

/**
 * Connecting an account by signing in at its network: `start` hands out the network's page and keeps what finishing
 * needs under the hash of a one-time state; `callback` finishes when the network sends the person back, as the
 * caller who started, whose permission is checked again, locked, in the transaction that writes the account.
 */
export class AccountConnects extends Effect.Service<AccountConnects>()("AccountConnects", {
  effect: Effect.gen(function*() {
    const repo = yield* AccountConnectsRepo
    const accounts = yield* SocialAccountsRepo
    const policy = yield* SocialAccountsPolicy
    const networks = yield* OAuthNetworks
    const providers = yield* SocialProviders
    const cipher = yield* CredentialsCipher

    const networkOf = (provider: OAuthProvider) =>
      Effect.gen(function*() {
        const network = networks.get(provider)
        if (network === undefined || network.missingSettings.length > 0) {
          const missing = network?.missingSettings ?? []
          return yield* new Conflict({
            message: `This server cannot connect ${displayNameOf(provider)} accounts by signing in` +
              (missing.length > 0 ? `: its operator sets ${missing.join(" and ")} (README, Connecting accounts)` : " yet"),
            reason: "provider_not_configured"
          })
        }
        return network
      })

    const starterOf = Effect.map(CurrentCaller, (caller): Starter =>
      Caller.$is("User")(caller)
        ? { _tag: "User", user: caller.user }
        : { _tag: "ApiKey", apiKeyId: caller.apiKeyId, organizationId: caller.organizationId })

    /**
     * `origin` is where the network sends the person back: PUBLIC_URL, else the Host the request came to, which is
     * taken only for this machine's own address (a developer's server): any other would be the caller's to choose,
     * and each would register Postline as an app again at a Mastodon instance.
     */
    const start = (teamId: TeamId, input: StartConnect, redirectOrigin: { readonly url: string; readonly configured: boolean }) =>
      Effect.gen(function*() {
        yield* authorize(policy.canManage(teamId, { lock: false }))(() => Effect.void)
        const network = yield* networkOf(input.provider)
        const origin = redirectOrigin.url
        if (!redirectOrigin.configured && !isLoopback(origin)) {
          return yield* new Conflict({
            message: "This server signs in to networks only where its operator set PUBLIC_URL (the address the " +
              "networks send people back to), or when it is reached at 127.0.0.1 or localhost",
            reason: "provider_not_configured"
          })
        }
        const returnTo = input.returnTo ?? null
        if (returnTo !== null && !returnToAllowed(returnTo, origin)) {
          return yield* new BadRequest({
            message: "returnTo must be an address of this server or a loopback address (http://127.0.0.1:<port>/…)",
            reason: "return_to_not_allowed"
          })
        }
        const state = randomBytes(32).toString("base64url")
        const redirectUri = `${origin}/v1/oauth/callback/${input.provider}`
        const started = yield* network.authorize({ state, redirectUri, hints: input as never }).pipe(
          Effect.mapError((error) =>
            new BadRequest({
              message: `Signing in at ${displayNameOf(input.provider)} could not be started: ${error.providerMessage}`,
              reason: "credentials_not_verified"
            })
          )
        )
        const pending = yield* cipher.encrypt(started.pending)
        const starter = yield* starterOf
        // Connects are few and short-lived: each new one clears those a day past their end.
        yield* repo.forgetEnded
        const connect = yield* authorize(policy.canManage(teamId, { lock: true }))(() =>
          repo.insert({
            teamId,
            starter,
            provider: input.provider,
            stateHash: hashOf(started.state ?? state),
            pending,
            redirectUri,
            returnTo,
            lifetimeSeconds: connectLifetimeSeconds
          })
        ).pipe(transactionally)
        return { connectId: connect.id, authorizationUrl: started.authorizationUrl, expiresAt: connect.expiresAt }
      })

    // A connect being finished (its callback came in time) is pending until it ends, unless its process died.
    const statusOf = (connect: ConnectRow): AccountConnect["status"] =>
      connect.status === "connected" || connect.status === "failed"
        ? connect.status
        : (connect.status === "pending" && connect.expired) || connect.abandoned
        ? "expired"
        : "pending"

    const get = (teamId: TeamId, connectId: ConnectId) =>
      authorize(policy.canManage(teamId, { lock: false }))(() =>
        Effect.gen(function*() {
          const connect = yield* Effect.flatten(repo.find(teamId, connectId)).pipe(
            Effect.orElseFail(() => new NotFound({ message: `Connect ${connectId} not found` }))
          )
          const accountId = connect.socialAccountId
          const account = accountId === null
            ? null
            : Option.getOrNull(yield* authorize(policy.canRead(teamId))(() => accounts.find(teamId, accountId)))
          return {
            connectId: connect.id,
            teamId: connect.teamId,
            provider: connect.provider,
            status: statusOf(connect),
            account,
            error: connect.error,
            createdAt: connect.createdAt,
            expiresAt: connect.expiresAt
          } satisfies AccountConnect
        }))

    /** The account connected as the starter: the team's account of the same network user is updated, else one is added. */
    const keepAccount = (connect: ClaimedConnect, credentials: Parameters<typeof credentialsToJson>[0]) =>
      Effect.gen(function*() {
        const profile = yield* providers.verify(credentials)
        const ciphertext = yield* Effect.flatMap(Effect.orDie(credentialsToJson(credentials)), cipher.encrypt)
        const network = networks.get(connect.provider)!
        const tokenExpiresAt = network.expiresAt(credentials as never)
        const caller = connect.starter._tag === "User" ? Caller.User(connect.starter) : Caller.ApiKey(connect.starter)
        return yield* authorize(policy.canManage(connect.teamId, { lock: true }))(() =>
          Effect.gen(function*() {
            const { networkUserId } = profile
            const existing = networkUserId === null
              ? Option.none()
              : yield* accounts.findNetworkUser(connect.teamId, connect.provider, { ...profile, networkUserId })
            // An account removed meanwhile is added again.
            const replaced = Option.isSome(existing)
              ? yield* accounts.replaceCredentials(existing.value, profile, ciphertext, tokenExpiresAt)
              : Option.none()
            const account = Option.isSome(replaced)
              ? replaced.value
              : yield* accounts.insert({ teamId: connect.teamId, provider: connect.provider, profile, ciphertext, tokenExpiresAt })
            yield* repo.markConnected(connect.id, account.id)
            return account
          })
        ).pipe(transactionally, Effect.provideService(CurrentCaller, caller))
      })

    const failureMessage = (error: unknown) =>
      error instanceof ProviderError
        ? `${displayNameOf(error.provider)} did not connect the account: ${error.providerMessage}`
        : error instanceof NotFound || (error as { _tag?: string })._tag === "Forbidden" ||
            (error as { _tag?: string })._tag === "Unauthorized"
        ? "Whoever started this connect may no longer connect accounts to the team"
        : "This server cannot read what the connect kept: start connecting again"

    const finish = (connect: ClaimedConnect, callbackUrl: URL) =>
      Effect.gen(function*() {
        const network = networks.get(connect.provider)!
        const pending = yield* cipher.decrypt(connect.pending)
        const state = callbackUrl.searchParams.get("state") ?? ""
        const credentials = yield* network.finish({ pending, state, redirectUri: connect.redirectUri, callbackUrl })
        return yield* keepAccount(connect, credentials)
      }).pipe(
        Effect.matchEffect({
          onSuccess: (account): Effect.Effect<CallbackOutcome> =>
            Effect.succeed({ _tag: "Connected", connectId: connect.id, account, returnTo: connect.returnTo }),
          onFailure: (error) => {
            const message = failureMessage(error)
            return Effect.as(repo.markFailed(connect.id, message), {
              _tag: "Failed" as const,
              connectId: connect.id,
              message,
              returnTo: connect.returnTo
            })
          }
        })
      )

    /** The network sent the person back to `/v1/oauth/callback/<provider>` with this URL. */
    const refusal = (message: string): CallbackOutcome => ({ _tag: "Refused", message })

    const callback = (provider: string, callbackUrl: URL) =>
      Effect.gen(function*() {
        const state = callbackUrl.searchParams.get("state")
        const unknown = "This link is not one of a connect: start connecting the account again."
        if (state === null || state === "" || state.length > 256) return refusal(unknown)
        const claimed = yield* repo.claim(hashOf(state), provider)
        if (claimed._tag === "Unknown") return refusal(unknown)
        if (claimed._tag === "Taken") {
          return refusal(
            claimed.connect.expired && claimed.connect.status === "pending"
              ? "This connect expired: start connecting the account again."
              : "This link was used already: a connect's link works once."
          )
        }
        return yield* finish(claimed.connect, callbackUrl)
      })

    return { start, get, callback } as const
  }),
  dependencies: [AccountConnectsRepo.Default, SocialAccountsRepo.Default, SocialAccountsPolicy.Default]
}) {}
