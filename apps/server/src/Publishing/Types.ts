import type { OrganizationId, PostId, PublishError, SocialAccountId } from "@postline/domain"
import type { Hold } from "../Credits/Repo.js"
import type { AccountBody } from "../Posts/BodyRepo.js"
import type { ProviderName } from "../Providers/Credentials.js"
import type { PublishingAccount } from "../SocialAccounts/PublishingAccount.js"
import type { AttemptOutcome } from "./AttemptsRepo.js"

/** One account of a publish, as checked before anything is sent: to send (with its price), or failed already. */
export type Check =
  | { readonly _tag: "Send"; readonly account: PublishingAccount; readonly credits: number; readonly publishes: number }
  | { readonly _tag: "Refused"; readonly account: PublishingAccount; readonly error: PublishError }

/** A target about to be sent: its attempt is recorded and its credits held. */
export interface Sending {
  readonly organizationId: OrganizationId
  readonly postId: PostId
  /** What the account gets, its links as the provider receives them. */
  readonly body: AccountBody
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
