import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { integer, oneOf, strict, Timestamp } from "./Fields.js"
import { PostId, SocialAccountId } from "./Ids.js"
import { ListEnvelope, listQueryFieldsSortedBy } from "./Lists.js"
import { OrganizationPath } from "./Organizations.js"

const credits = integer

export const CreditBalance = Schema.Struct({
  balance: credits("Credits the organization has"),
  reserved: credits("Credits held for publishes under way"),
  available: credits("balance - reserved: what a new publish may use")
}).annotations({ identifier: "CreditBalance", description: "An organization's credits, in whole credits" })
export type CreditBalance = typeof CreditBalance.Type

export const CreditTransactionKind = oneOf("grant", "reserve", "spend", "release", "analytics", "overage").annotations({
  identifier: "CreditTransactionKind",
  description: "grant adds to the balance; reserve holds credits for a publish; spend takes a held credit from the " +
    "balance when the publish succeeds; release gives it back when it fails; " +
    "analytics takes the credits of one live analytics read of an account from the balance; " +
    "overage adds the credits a subscribed organization lacked for a spend, billed as metered usage of its plan"
})

export const CreditTransaction = Schema.Struct({
  id: Schema.String,
  kind: CreditTransactionKind,
  amount: credits("Always positive; kind says which way it goes"),
  balanceAfter: credits("The balance after this entry"),
  reservedAfter: credits("The reserved credits after this entry"),
  postId: Schema.NullOr(PostId),
  socialAccountId: Schema.NullOr(SocialAccountId),
  note: Schema.NullOr(Schema.String),
  createdAt: Timestamp
}).annotations({ identifier: "CreditTransaction" })
export type CreditTransaction = typeof CreditTransaction.Type

export const CreditTransactionSortField = oneOf("createdAt").annotations({
  identifier: "CreditTransactionSortField",
  description: "Entries sort by when they were made"
})

export const CreditTransactionListQuery = Schema.Struct(listQueryFieldsSortedBy(CreditTransactionSortField))
  .annotations(strict)
export type CreditTransactionListQuery = typeof CreditTransactionListQuery.Type

export const CreditTransactionList = ListEnvelope(CreditTransaction, "CreditTransactionList")

export class CreditsGroup extends HttpApiGroup.make("credits")
  .add(
    HttpApiEndpoint.get("getCredits", "/v1/organizations/:organizationId/credits")
      .setPath(OrganizationPath)
      .addSuccess(CreditBalance)
      .annotate(OpenApi.Summary, "Get credit balance")
      .annotate(OpenApi.Description, "The organization's credits; any member may see them.")
  )
  .add(
    HttpApiEndpoint.get("listCreditTransactions", "/v1/organizations/:organizationId/credits/transactions")
      .setPath(OrganizationPath)
      .setUrlParams(CreditTransactionListQuery)
      .addSuccess(CreditTransactionList)
      .annotate(OpenApi.Summary, "List credit transactions")
      .annotate(
        OpenApi.Description,
        "The ledger the balance is the sum of, newest first by default. Admins, owners and the organization's API keys may."
      )
  )
  .annotate(OpenApi.Title, "credits")
  .annotate(OpenApi.Description, "Organization credits: what publishing to costed providers spends")
{}
