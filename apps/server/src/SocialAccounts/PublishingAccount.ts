import type { SqlClient } from "@effect/sql"
import { SocialAccountId, SocialAccountStatus, SocialProvider } from "@postline/domain"
import { Effect, Schema } from "effect"
import { ContentLimits } from "../Providers/SocialProvider.js"

/** An account as publishing needs it: its provider and status, its stored credentials (one ciphertext), its limits. */
export const PublishingAccount = Schema.Struct({
  id: SocialAccountId,
  provider: SocialProvider,
  status: SocialAccountStatus,
  ciphertext: Schema.String,
  contentLimits: ContentLimits
})
export type PublishingAccount = typeof PublishingAccount.Type

/**
 * The account in the `social_accounts` row named `alias`, as one JSON value of PublishingAccount's shape: the one
 * place that says which columns make it, for a statement that reads accounts and one that joins them to targets.
 */
export const publishingAccountJson = (sql: SqlClient.SqlClient, alias: string) => {
  const account = sql(alias)
  return sql`json_build_object('id', ${account}.id, 'provider', ${account}.provider, 'status', ${account}.status,
    'ciphertext', ${account}.credentials, 'contentLimits', ${account}.content_limits)`
}

const decodeAccount = Schema.decodeUnknown(Schema.NullOr(PublishingAccount))

/**
 * The account a statement read with publishingAccountJson (null where none joined). A row that does not decode is a
 * defect of the database, not of the request.
 */
export const decodePublishingAccount = (value: unknown) => Effect.orDie(decodeAccount(value))
